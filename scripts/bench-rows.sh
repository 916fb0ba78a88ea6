# shellcheck shell=bash
# The ten-million-row pass of scripts/bench.sh (BENCH_ROWS=N), sourced by it after its other passes; it uses
# bench.sh's functions (start_instance, run_driver, quiet_wait, stop_apps) and variables.
#
# One private mariadbd of its own (never the shared server's configuration), on loopback port
# BENCH_ROWS_DB_PORT (3407), its data directory under target/bench-rows, with the shared server's
# durability (innodb_flush_log_at_trx_commit, redo log size, flush method; binlog off) and the buffer
# pool BENCH_ROWS_POOL (the size docs/benchmark.md recommends for ten million rows). On it, in one run:
#   1. the empty pass: unique and replay against a fresh database ${DB}_empty;
#   2. the database $DB holding N orders, payments and tokens, bulk-loaded by RowsLoader (INSERT ... SELECT,
#      not through the API) unless the data directory already holds such a load of the same schema and
#      generator (BENCH_ROWS_RELOAD=1 loads anew); the server restarted after a load, so that no flushing
#      of the load runs under the measurement; its expired tokens topped up to their share;
#   3. EXPLAIN of the token purge and of every query reconciliation and the backlog gauges run, on that
#      data (RowsExplain), into src/bench/explain-rows.txt;
#   4. the loaded pass: the same scenarios against $DB;
#   5. comparison-rows.txt: the loaded pass beside the empty one (the target: at least 90 %).
# The server is shut down at the end, however the script ends; its data directory stays for the next run
# (about 13 GB at ten million rows).

ROWS=$BENCH_ROWS
[[ $ROWS =~ ^[0-9]+$ && $ROWS -ge 1000 ]] || { echo "bench.sh: BENCH_ROWS=$ROWS is not a number of rows (1000 or more)" >&2; exit 1; }
ROWS_PHASES=${BENCH_ROWS_ONLY:-unique,replay}
ROWS_DIR=$(pwd -P)/${BENCH_ROWS_DIR:-target/bench-rows}
ROWS_DB_PORT=${BENCH_ROWS_DB_PORT:-3407}
ROWS_POOL=${BENCH_ROWS_POOL:-8G}
# a load inserts into every index at random places: with all of them in memory it is bound by the CPU
ROWS_LOAD_POOL=${BENCH_ROWS_LOAD_POOL:-8G}
ROWS_EMPTY_DB=${DB}_empty
rows_server_pid=

rows_sql() { "$mysql_cli" -h127.0.0.1 -P"$ROWS_DB_PORT" -uroot "$@"; }

# What a load depends on: the schema's migrations and the generator. A data directory loaded under another
# fingerprint, or with another N, is loaded anew.
rows_fingerprint() {
  cat src/main/resources/db/migration/*.sql src/main/resources/db/moved/*.sql src/main/resources/db/sandbox/*.sql \
    src/test/java/io/payonce/bench/RowsLoader.java | sha1sum | cut -c1-16
}

# The shared server's durability, so that what differs from the main pass is the data, not the server.
rows_config() {
  local durability user=mysql
  [[ $EUID -eq 0 ]] || user=$(id -un)
  durability=$(shared_settings innodb_flush_log_at_trx_commit innodb_log_file_size innodb_flush_method \
    innodb_doublewrite)
  cat >"$ROWS_DIR/my.cnf" <<EOF
[mariadbd]
user=$user
datadir=$ROWS_DIR/data
tmpdir=$ROWS_DIR/tmp
socket=$ROWS_DIR/mariadbd.sock
pid-file=$ROWS_DIR/mariadbd.pid
port=$ROWS_DB_PORT
bind-address=127.0.0.1
skip-name-resolve
skip-log-bin
max_connections=300
innodb_buffer_pool_size=$1
$durability
EOF
}

rows_chown() { [[ $EUID -ne 0 ]] || chown -R mysql:mysql "$ROWS_DIR"; }

rows_install() {
  echo "bench.sh: a fresh data directory in $ROWS_DIR/data" >&2
  rm -rf "$ROWS_DIR/data" "$ROWS_DIR/loaded"
  mkdir -p "$ROWS_DIR/data" "$ROWS_DIR/tmp"
  rows_config "$ROWS_LOAD_POOL"
  rows_chown
  if [[ $EUID -eq 0 ]] && ! runuser -u mysql -- test -x "$ROWS_DIR/data"; then
    echo "bench.sh: the user mysql cannot enter $ROWS_DIR; run from a checkout it can read" >&2
    exit 1
  fi
  mariadb-install-db --no-defaults --datadir="$ROWS_DIR/data" --tmpdir="$ROWS_DIR/tmp" \
    --user="$(sed -n 's/^user=//p' "$ROWS_DIR/my.cnf")" --auth-root-authentication-method=normal --skip-test-db \
    >"$ROWS_DIR/install.log" 2>&1 || { tail -n 20 "$ROWS_DIR/install.log" >&2; exit 1; }
}

# Starts the server with a buffer pool of $1.
rows_start() {
  require_free "$ROWS_DB_PORT"
  rows_config "$1"
  rows_chown
  /usr/sbin/mariadbd --defaults-file="$ROWS_DIR/my.cnf" >>"$ROWS_DIR/mariadbd.log" 2>&1 9>&- &
  rows_server_pid=$!
  for _ in $(seq 1 1200); do # 10 minutes at most: a crash recovery after a killed load may take long
    rows_sql -e 'SELECT 1' >/dev/null 2>&1 && break
    kill -0 "$rows_server_pid" 2>/dev/null || break
    sleep 0.5
  done
  if ! rows_sql -e 'SELECT 1' >/dev/null 2>&1; then
    echo "bench.sh: the private MariaDB did not start; its log ($ROWS_DIR/mariadbd.log):" >&2
    tail -n 20 "$ROWS_DIR/mariadbd.log" >&2
    exit 1
  fi
  echo "bench.sh: private MariaDB on port $ROWS_DB_PORT, pid $rows_server_pid, buffer pool $1" >&2
}

# A clean shutdown: every dirty page written, so that the next start finds nothing to flush or recover.
rows_stop() {
  [[ -n $rows_server_pid ]] || return 0
  rows_sql -e 'SHUTDOWN' >/dev/null 2>&1 || kill -TERM "$rows_server_pid" 2>/dev/null || true
  for _ in $(seq 1 1200); do kill -0 "$rows_server_pid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL "$rows_server_pid" 2>/dev/null || true
  rows_server_pid=
}

rows_java() {
  java -Xmx256m -XX:+UseSerialGC -Djava.util.logging.manager=org.jboss.logmanager.LogManager \
    -cp "target/classes:$classpath" -Drows.port="$ROWS_DB_PORT" -Drows.db="$DB" -Drows.n="$ROWS" "$@" 9>&-
}

# A data directory holding N rows of this schema and generator, loaded anew unless one is there already.
rows_ensure_loaded() {
  local want began
  want="rows=$ROWS db=$DB fingerprint=$(rows_fingerprint)"
  if [[ ${BENCH_ROWS_RELOAD:-} != 1 && -f $ROWS_DIR/loaded && $(head -n 1 "$ROWS_DIR/loaded") == "$want" ]]; then
    echo "bench.sh: reusing the loaded data directory ($want; $(sed -n 2p "$ROWS_DIR/loaded"))" >&2
    return 0
  fi
  rows_install
  rows_start "$ROWS_LOAD_POOL"
  rows_sql -e "CREATE DATABASE \`$DB\`"
  runtime=jvm
  # the application's own migrations make the schema
  start_instance target/bench-rows-migrate.log "$PORT" "127.0.0.1:$ROWS_DB_PORT/$DB" app_exec
  stop_apps
  echo "bench.sh: loading $ROWS orders, payments and tokens (RowsLoader)" >&2
  began=$(date +%s)
  rows_java io.payonce.bench.RowsLoader load
  rows_java io.payonce.bench.RowsLoader sizes >"$ROWS_DIR/sizes.txt"
  rows_stop
  printf '%s\nloaded in %d s with a buffer pool of %s (and written out at shutdown), %s\n' "$want" \
    "$(($(date +%s) - began))" "$ROWS_LOAD_POOL" \
    "$(du -sh "$ROWS_DIR/data" | cut -f1) on disk" >"$ROWS_DIR/loaded"
  cat "$ROWS_DIR/loaded" "$ROWS_DIR/sizes.txt" >&2
}

# The driver against one database of the private server: its rows ($1, 0 for the empty one) tag the pass.
rows_measure() {
  local rows=$1 database=$2 log=$3
  runtime=jvm
  quiet_wait
  echo "bench.sh: $quiet; starting $runtime on port $PORT against $database ($rows rows)" >&2
  start_instance "$log" "$PORT" "127.0.0.1:$ROWS_DB_PORT/$database" app_exec
  run_driver -Dbench.only="$ROWS_PHASES" -Dbench.rows="$rows" -Dbench.db.name="$database" \
    -Dbench.db.port="$ROWS_DB_PORT" -Dbench.limits.from=src/bench/summary.jsonl -Dbench.app.java.opts="$JAVA_OPTS" \
    -Dbench.redis="${QUARKUS_REDIS_HOSTS:-redis://127.0.0.1:6379}"
  stop_apps
}

trap 'cleanup; rows_stop' EXIT
rows_ensure_loaded
rows_start "$ROWS_POOL"
rows_sql -e "DROP DATABASE IF EXISTS \`$ROWS_EMPTY_DB\`; CREATE DATABASE \`$ROWS_EMPTY_DB\`"
rows_measure 0 "$ROWS_EMPTY_DB" target/bench-rows-empty.log
rows_sql -e "DROP DATABASE \`$ROWS_EMPTY_DB\`"
echo "bench.sh: EXPLAIN of the purge and of reconciliation's statements on $ROWS rows (RowsExplain)" >&2
rows_java io.payonce.bench.RowsExplain src/bench/explain-rows.txt >/dev/null
rows_measure "$ROWS" "$DB" target/bench-rows-loaded.log
# what the pass's token purge deleted goes back, so that the next run finds the data as loaded
rows_java io.payonce.bench.RowsLoader topup
rows_stop
{
  echo "data      $(sed -n 1p "$ROWS_DIR/loaded"); $(sed -n 2p "$ROWS_DIR/loaded")"
  sed 's/^/          /' "$ROWS_DIR/sizes.txt"
  echo "          the plans of the purge and of reconciliation's statements on this data: explain-rows.txt"
} >target/bench-rows-data.txt
echo >&2
java -cp "$classpath" io.payonce.bench.Comparison src/bench rows target/bench-rows-data.txt || { ((driver_rc)) || driver_rc=1; }
