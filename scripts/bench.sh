#!/usr/bin/env bash
# The benchmark: builds the packaged application, starts it on port 18090 against a fresh database
# `payonce_bench` on the local MariaDB and the local Redis (sandbox channel, JAVA_OPTS from
# java25.sh and the AOT cache app_train_aot trains), measures its start-up and idle memory, then runs the load driver
# (src/test/java/io/payonce/bench) and stops the application; with BENCH_NATIVE, then the same
# against the native executable, and with BENCH_GALERA, against two instances on a Galera cluster
# (below); last, the external pass (scripts/bench-external.sh): the JVM application, and as asked the
# native executable, a baseline and the seed design's port, all charging an external channel that
# answers at once, rounds alternated. Writes src/bench/report.txt, summary.jsonl and latency.svg;
# prints the report. About 3.5 minutes with a warm Maven cache (a minute of it the warm-up, until the
# application's JIT has settled), 1.5 more for the native pass, about 3 more for the Galera pass, 1.5
# for the external pass with the JVM alone (2.5 with BENCH_NATIVE, 5.5 with every target), plus up
# to BENCH_QUIET_WAIT (180) seconds, before each pass, when other work keeps the machine busy.
#
#   scripts/bench.sh                    the full run
#   BENCH_SCALE=0.2 scripts/bench.sh    every N scaled (a quick look; figures less stable)
#   BENCH_ONLY=limits,replay ...        only these phases (limits,unique,replay,storm,wait)
#   BENCH_JFR=/tmp/app.jfr ...          also record the application with Java Flight Recorder
#                                       (BENCH_JFR_SETTINGS: a .jfc file or name, default profile)
#   BENCH_DRIVER_JFR=/tmp/driver.jfr    and/or the load driver (to check it is not the bottleneck)
#   BENCH_NATIVE=target/payonce-0.1.0-SNAPSHOT-runner scripts/bench.sh
#                                       after the JVM pass, a second pass against this native executable:
#                                       same port, the database created empty again, the same
#                                       QUARKUS_* variables, no JAVA_OPTS (BENCH_NATIVE_OPTS: its own
#                                       runtime options, such as -Xmx256m; none by default); phases
#                                       unique and replay only. Writes report-native.txt,
#                                       latency-native.svg, its lines in summary.jsonl (tagged
#                                       "runtime":"native") and comparison.txt, and prints the comparison.
#   BENCH_GALERA=1 scripts/bench.sh     after those, a pass on a three-node MariaDB Galera cluster of its own
#                                       (GaleraCluster, from the test classpath, on free loopback ports, with
#                                       the shared server's durability and buffer pool): two instances of the
#                                       JVM application with the same options, on nodes 1 and 2, each charging
#                                       its own sandbox, the shared Redis; phases limits (the cluster's database
#                                       limit), unique, replay and storm, requests spread over both instances,
#                                       the copies of one request split across them. Writes report-galera.txt,
#                                       latency-galera.svg, its lines in summary.jsonl (tagged
#                                       "deployment":"galera-2", the others "single") and comparison-galera.txt,
#                                       and prints that comparison. Needs galera-4 and rsync
#                                       (scripts/services.sh --test-tools, which this runs).
#   BENCH_ROWS=10000000 scripts/bench.sh
#                                       after those, the ten-million-row pass (scripts/bench-rows.sh): a
#                                       private mariadbd with the shared server's durability and the buffer
#                                       pool docs/benchmark.md recommends; unique and replay against an empty
#                                       database, then against N orders, payments and tokens loaded in bulk
#                                       (kept in target/bench-rows for the next run; BENCH_ROWS_RELOAD=1 loads
#                                       anew), and EXPLAIN of the purge and of reconciliation's statements.
#                                       Writes report-rows-empty.txt, report-rows.txt, explain-rows.txt and
#                                       comparison-rows.txt. Loading ten million took an hour here.
#   BENCH_EXTERNAL=0|1|only              the external pass: 1 (default) after the others, 0 not at all,
#                                       only: it alone. Its targets: BENCH_NATIVE, BENCH_BASELINE_JVM,
#                                       BENCH_BASELINE_NATIVE, BENCH_SEED (scripts/bench-external.sh).
#                                       Writes report-external.txt, comparison-external.txt and its lines in
#                                       summary.jsonl (tagged "channel":"external" and the target; the
#                                       sandbox passes' lines "channel":"sandbox").
#
# Traffic goes to loopback only. The shared MariaDB and Redis are used, never stopped or flushed:
# the database payonce_bench is dropped and recreated, and Redis keys the run made are deleted.
# Everything the script starts (instances, the cluster) is stopped when it ends, however it ends.
# src/bench holds the outputs of one invocation: a run without BENCH_NATIVE, BENCH_GALERA or the
# external pass removes those of an earlier such pass.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${BENCH_PORT:-18090}
MANAGEMENT_OFFSET=${BENCH_MANAGEMENT_OFFSET:-1000} # each instance's management interface: its port + this
DB=${BENCH_DB:-payonce_bench}
# The driver's own JVM: a fixed heap with a large young generation, so its few collections are short
# and rare and do not show up as latency of the application.
DRIVER_OPTS="-Xms1g -Xmx1g -Xmn768m -XX:+UseSerialGC"
ONLY=${BENCH_ONLY:-limits,unique,replay,storm,wait}
# The native pass runs the phases that compare the application's runtimes; the limits are the machine's
# (its bounds come from the JVM pass), storm and wait are correctness and wake-up checks.
NATIVE_PHASES=unique,replay
NATIVE=${BENCH_NATIVE:-}
if [[ -n $NATIVE ]]; then
  [[ -x $NATIVE && -f $NATIVE ]] || { echo "bench.sh: BENCH_NATIVE=$NATIVE is not an executable file" >&2; exit 1; }
  NATIVE=$(realpath "$NATIVE")
fi
# The Galera pass compares with the single server what a cluster changes: the database's limit, and
# unique and replay; storm checks that copies split across two nodes still make one charge. wait, a
# measure of wake-up bursts, is measured once, on the single server.
GALERA=${BENCH_GALERA:-}
GALERA_PHASES=limits,unique,replay,storm
# the database GaleraCluster creates on the cluster
GALERA_DB=payonce
# The external pass (scripts/bench-external.sh): 1 after the sandbox passes, 0 not at all, only: instead of them.
EXTERNAL=${BENCH_EXTERNAL:-1}
[[ $EXTERNAL == [01] || $EXTERNAL == only ]] || { echo "bench.sh: BENCH_EXTERNAL=$EXTERNAL: want 1, 0 or only" >&2; exit 1; }
# the sandbox passes that follow the JVM's, which an external pass alone does not run
SANDBOX_NATIVE=$NATIVE
[[ $EXTERNAL != only ]] || SANDBOX_NATIVE= GALERA=
# its targets (BENCH_BASELINE_JVM, BENCH_BASELINE_NATIVE, BENCH_SEED), checked before anything starts
source scripts/bench-external.sh

if [[ -n $GALERA ]]; then
  DB_NAME=$DB scripts/services.sh --test-tools
else
  DB_NAME=$DB scripts/services.sh
fi
source scripts/java25.sh

require_free() {
  if port_open "$1"; then
    echo "bench.sh: port $1 is in use; stop what listens there first" >&2
    exit 1
  fi
}
require_free "$PORT"
[[ -z $GALERA ]] || require_free "$((PORT + 1))"
joined() { local IFS=,; echo "$*"; }

# Percent of the machine's CPU time that was busy over 2 s, from the first line of /proc/stat.
busy_pct() {
  local u n s i w q sq st b1 t1 b2 t2
  read -r _ u n s i w q sq st _ </proc/stat; b1=$((u + n + s + q + sq + st)); t1=$((b1 + i + w))
  sleep 2
  read -r _ u n s i w q sq st _ </proc/stat; b2=$((u + n + s + q + sq + st)); t2=$((b2 + i + w))
  echo $((100 * (b2 - b1) / (t2 - t1)))
}

# Other builds and tests share the two cores: give them up to BENCH_QUIET_WAIT seconds to finish, so
# the figures are this machine's and not what is left of it. The report says what it found.
quiet_wait() {
  local waited=0 busy
  busy=$(busy_pct)
  while ((busy > ${BENCH_QUIET_BUSY:-15} && waited < ${BENCH_QUIET_WAIT:-180})); do
    ((waited == 0)) && echo "bench.sh: the machine is ${busy}% busy; waiting up to ${BENCH_QUIET_WAIT:-180} s for it to settle" >&2
    sleep 3; waited=$((waited + 5))
    busy=$(busy_pct)
  done
  quiet="machine ${busy}% busy (of all cores) after waiting ${waited} s for it to settle"
}

echo "bench.sh: building" >&2
./mvnw -B -q package dependency:build-classpath -DskipTests \
  -Dmdep.includeScope=test -Dmdep.outputFile=target/bench-classpath.txt
app_train_aot

mysql_cli=$(command -v mariadb || command -v mysql)
recreate_db() {
  "$mysql_cli" -h127.0.0.1 -P3306 -uroot -e "DROP DATABASE IF EXISTS \`$DB\`; CREATE DATABASE IF NOT EXISTS \`$DB\`"
}

# The running pass's instances, and each one's start-up (ms), Quarkus' "started in" and idle RSS (KiB).
app_pids=() app_ports=() startups=() started_ins=() idle_rsss=()
# the load driver while it runs (run_driver)
driver_pid=
stop_apps() {
  local pid
  # the external pass's channel and seed are in the list too
  for pid in "${app_pids[@]}"; do app_stop "$pid"; done
  app_pids=() app_ports=() startups=() started_ins=() idle_rsss=()
}

# The Galera pass's cluster: GaleraCluster's main, from the test classpath, holding three mariadbd. Its
# standard input is a pipe this script holds open on fd 9, which nothing else the script starts
# inherits (9>&-): when the script ends, however it ends, the pipe closes and the cluster kills its
# nodes. It also stops by itself after the bound it is given.
galera_pid= galera_ports=()
GALERA_LIFE_SECONDS=3600
# One attempt: answers 0 once the cluster is ready (galera_ports set), else stops what it started.
launch_cluster() {
  local out=$1 log=$2 opts=$3
  : >"$out"
  # shellcheck disable=SC2086  # opts is a list of options, split on purpose
  exec 9> >(exec java -Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$classpath" \
    io.payonce.support.GaleraCluster bench "$GALERA_LIFE_SECONDS" $opts >"$out" 2>"$log")
  galera_pid=$!
  for _ in $(seq 1 600); do # 300 s at most: its own bounds are 60 s to install a node and 90 s to sync one
    grep -q '^ready' "$out" && break
    kill -0 "$galera_pid" 2>/dev/null || break
    sleep 0.5
  done
  if ! grep -q '^ready' "$out"; then
    echo "bench.sh: the Galera cluster did not start; its log ($log, the nodes' in target/it-logs):" >&2
    tail -n 20 "$log" >&2
    stop_cluster
    return 1
  fi
  mapfile -t galera_ports < <(awk '$1 == "node" {print $4}' "$out")
  echo "bench.sh: Galera cluster $(grep '^ready' "$out"), SQL ports $(joined "${galera_ports[@]}")" >&2
}
# Two attempts: on a machine busy with other tests a node's mariadb-install-db can fail where a fresh
# start succeeds.
# The shared server's settings named, a name=value line each: what a server of the benchmark's own takes
# from it, so that only what a pass compares differs.
shared_settings() {
  local name
  for name in "$@"; do
    echo "$name=$("$mysql_cli" -h127.0.0.1 -P3306 -uroot -N -e "SELECT @@$name")"
  done
}
start_cluster() {
  local opts
  # the shared server's durability and memory, so that the cluster is what differs
  opts=$(shared_settings innodb_flush_log_at_trx_commit innodb_buffer_pool_size innodb_log_file_size | paste -sd' ')
  echo "bench.sh: starting a three-node Galera cluster ($opts)" >&2
  launch_cluster target/bench-galera-cluster.out target/bench-galera-cluster.log "$opts" ||
    launch_cluster target/bench-galera-cluster.out target/bench-galera-cluster-2.log "$opts" ||
    exit 1
}
stop_cluster() {
  [[ -n $galera_pid ]] || return 0
  exec 9>&- # its standard input ends: it kills its nodes and exits
  for _ in $(seq 1 100); do kill -0 "$galera_pid" 2>/dev/null || break; sleep 0.1; done
  # still starting, so not reading its input: SIGTERM runs the hook that kills the nodes
  kill -TERM "$galera_pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$galera_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$galera_pid" 2>/dev/null || true
  # any node its starter did not take down: a mariadbd with a data directory of this cluster
  local pid
  for pid in $(pgrep -x mariadbd || true); do
    if [[ $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) == *"--defaults-file=$(pwd -P)/target/galera/bench/node"* ]]; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  galera_pid= galera_ports=()
}
cleanup() {
  [[ -z $driver_pid ]] || kill -TERM "$driver_pid" 2>/dev/null || true
  stop_apps
  stop_cluster
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

jfr_opts=()
if [[ -n ${BENCH_JFR:-} ]]; then
  jfr_opts=("-XX:FlightRecorderOptions=stackdepth=256"
    "-XX:StartFlightRecording=filename=$BENCH_JFR,settings=${BENCH_JFR_SETTINGS:-profile},dumponexit=true")
fi

# The native executable (BENCH_NATIVE, or the one native_executable names), from the folder the JVM pass
# runs in (target/quarkus-app), so that both find the same (no) config/application.properties and .env
# there; it takes no JVM options.
native_exec() {
  cd target/quarkus-app || exit 1
  # shellcheck disable=SC2086  # BENCH_NATIVE_OPTS is a list of options, split on purpose
  exec "${native_executable:-$NATIVE}" ${BENCH_NATIVE_OPTS:-}
}

# Starts one instance as "$@" (app_exec or native_exec) on port $2, its management interface on
# $2 + MANAGEMENT_OFFSET, against the database at $3 (host:port/name), and measures its start-up: adds its
# pid, port, start-up, "started in" and idle RSS to the pass's lists. The instances charge through their
# own sandbox unless instance_env (NAME=value items, exported for the instance) says otherwise, and are spoken
# to directly, without the gateway.
instance_env=()
start_instance() {
  local log=$1 port=$2 database=$3 ready=no started_ns ready_ns pid startup_ms started_in idle_rss_kib
  local management=$(($2 + MANAGEMENT_OFFSET))
  shift 3
  require_free "$port"
  require_free "$management"
  started_ns=$(date +%s%N)
  # a subshell whose last command, the function "$@", execs the instance: $! is the instance's pid
  (export PAYONCE_SANDBOX_ENABLED=true "${instance_env[@]}"
    QUARKUS_HTTP_PORT=$port QUARKUS_MANAGEMENT_PORT=$management PAYONCE_GATEWAY_CLIENT_AUTH=none \
    QUARKUS_DATASOURCE_REACTIVE_URL=mysql://$database \
    QUARKUS_DATASOURCE_JDBC_URL=jdbc:mariadb://$database \
    "$@") >"$log" 2>&1 9>&- &
  pid=$!
  app_pids+=("$pid") app_ports+=("$port")
  for _ in $(seq 1 1200); do # 60 s at most
    if curl -sf -o /dev/null "http://127.0.0.1:$management/q/health/ready"; then ready=yes; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  ready_ns=$(date +%s%N)
  if [[ $ready != yes ]]; then
    echo "bench.sh: the application ($runtime, port $port) did not become ready; its log ($log):" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  startup_ms=$(((ready_ns - started_ns) / 1000000))
  started_in=$(sed -n 's/.* started in \([0-9.]*\)s.*/\1/p' "$log" | head -n 1)
  sleep 3 # settle: let start-up garbage and lazy initialisation finish before reading idle memory
  idle_rss_kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
  startups+=("$startup_ms") started_ins+=("${started_in:-?}") idle_rsss+=("$idle_rss_kib")
  echo "bench.sh: $runtime on port $port ready in ${startup_ms} ms (Quarkus: started in ${started_in}s), idle RSS ${idle_rss_kib} KiB" >&2
}

# Starts the application as "$@" on port PORT and a fresh database on the shared server, once the
# machine is quiet.
start_app() {
  local log=$1
  shift
  recreate_db
  quiet_wait
  echo "bench.sh: $quiet; starting $runtime on port $PORT" >&2
  start_instance "$log" "$PORT" "127.0.0.1:3306/$DB" "$@"
}

# The machine limits are measured with the application's own client settings: from JAVA_OPTS when it
# sets them, else from application.properties, else Quarkus' default (3.33 caches prepared
# statements for MySQL/MariaDB unless told not to: measured, 0 COM_STMT_PREPARE per payment).
app_setting() {
  local key=$1 fallback=$2 value
  value=$(tr ' ' '\n' <<<"$JAVA_OPTS" | sed -n "s/^-D${key//./\\.}=//p" | tail -n 1)
  [[ -n $value ]] || value=$(sed -n "s/^${key//./\\.}=//p" src/main/resources/application.properties | tail -n 1)
  echo "${value:-$fallback}"
}

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# a run's own outputs (src/bench) do not make the code it measured a changed one
if [[ -n $(git status --porcelain --untracked-files=no -- . ':!src/bench' 2>/dev/null) ]]; then commit+="+changes"; fi
classpath="target/test-classes:$(cat target/bench-classpath.txt)"

# Runs the driver's class $1 with the system properties after it, for driver_limit seconds at most (900),
# keeps the worst exit status in driver_rc (2: a phase could not run) and goes on.
driver_rc=0
launch_driver() {
  local main=$1 rc=0
  shift
  # shellcheck disable=SC2086  # driver_opts is a list of options, split on purpose
  timeout "${driver_limit:-900}" java $driver_opts -cp "$classpath" -Dbench.redis="${QUARKUS_REDIS_HOSTS:-redis://127.0.0.1:6379}" \
    -Dbench.commit="$commit" -Dbench.scale="${BENCH_SCALE:-1}" -Dbench.quiet="$quiet" -Dbench.out=src/bench "$@" \
    "$main" 9>&- &
  # waited for rather than run in the foreground, so that INT or TERM stop the run at once (cleanup)
  driver_pid=$!
  wait "$driver_pid" || rc=$?
  driver_pid=
  ((rc <= driver_rc)) || driver_rc=$rc
}
driver_opts=$DRIVER_OPTS

# Runs the load driver against the instances started last, with the pass's own settings in "$@" (the
# database: -Dbench.db.name and -Dbench.db.port, this run's by default).
run_driver() {
  local driver_opts=$DRIVER_OPTS
  # the driver's recording is of the JVM pass's driver only, which a second pass would overwrite
  if [[ -n ${BENCH_DRIVER_JFR:-} && $runtime == jvm ]]; then
    driver_opts+=" -XX:FlightRecorderOptions=stackdepth=256"
    driver_opts+=" -XX:StartFlightRecording=filename=$BENCH_DRIVER_JFR,settings=profile,dumponexit=true"
  fi
  launch_driver io.payonce.bench.Bench -Dbench.port="$(joined "${app_ports[@]}")" -Dbench.db.name=$DB \
    -Dbench.db.pool="$(app_setting quarkus.datasource.reactive.max-size 20)" \
    -Dbench.db.cache-prepared="$(app_setting quarkus.datasource.reactive.cache-prepared-statements true)" \
    -Dbench.redis.pool="$(app_setting quarkus.redis.max-pool-size 6)" \
    -Dbench.runtime="$runtime" -Dbench.app.pid="$(joined "${app_pids[@]}")" \
    -Dbench.app.startup.ms="$(joined "${startups[@]}")" -Dbench.app.started.in="$(joined "${started_ins[@]}")" \
    -Dbench.app.idle.rss.kib="$(joined "${idle_rsss[@]}")" "$@"
}

# The JVM pass: the packaged application as run.sh runs it.
rm -f src/bench/report-native.txt src/bench/latency-native.svg src/bench/comparison.txt \
  src/bench/report-galera.txt src/bench/latency-galera.svg src/bench/comparison-galera.txt \
  src/bench/report-external.txt src/bench/comparison-external.txt
rm -f src/bench/report-rows*.txt src/bench/latency-rows*.svg src/bench/comparison-rows.txt src/bench/explain-rows.txt
if [[ $EXTERNAL == only ]]; then
  rm -f src/bench/report.txt src/bench/latency.svg src/bench/summary.jsonl
else
  runtime=jvm
  start_app target/bench-app.log app_exec "${jfr_opts[@]}"
  run_driver -Dbench.only="$ONLY" -Dbench.app.java.opts="$JAVA_OPTS"
  stop_apps
fi
[[ -n $SANDBOX_NATIVE || -n $GALERA || -n ${BENCH_ROWS:-} || $EXTERNAL != 0 ]] || exit "$driver_rc"
# The later passes take their bounds from the limits the JVM pass wrote to summary.jsonl; if that driver
# did not finish (exit status other than 0, or 2 for a phase that could not run), the file is an
# earlier run's and goes, so that a comparison cannot pair a later pass with it.
if ((driver_rc != 0 && driver_rc != 2)); then rm -f src/bench/summary.jsonl; fi
phases_of() { tr ',' '\n' <<<"$ONLY" | grep -Fx -f <(tr ',' '\n' <<<"$1") | paste -sd, -; }

# The native pass: the same port, database (created empty again) and QUARKUS_* variables.
if [[ -n $SANDBOX_NATIVE ]]; then
  native_only=$(phases_of "$NATIVE_PHASES") || true
  # the GraalVM release the executable was built with, as it records it
  native_vm=$(grep -a -o -m 1 'com\.oracle\.svm\.core\.VM=[[:print:]]*' "$NATIVE" | head -n 1 | cut -d= -f2) || true
  runtime=native
  start_app target/bench-native.log native_exec
  run_driver -Dbench.only="${native_only:-none}" -Dbench.limits.from=src/bench/summary.jsonl \
    -Dbench.app.executable="$NATIVE" -Dbench.app.native.opts="${BENCH_NATIVE_OPTS:-}" -Dbench.app.vm="${native_vm:-unknown}"
  stop_apps
  echo >&2
  java -cp "$classpath" io.payonce.bench.Comparison src/bench native || { ((driver_rc)) || driver_rc=1; }
fi

# The Galera pass: a fresh cluster, then two instances of the JVM application as the JVM pass ran it,
# the first on node 1 (it migrates the empty schema), the second on node 2 once the first is ready.
if [[ -n $GALERA ]]; then
  galera_only=$(phases_of "$GALERA_PHASES") || true
  runtime=jvm
  start_cluster
  quiet_wait
  echo "bench.sh: $quiet; starting $runtime on ports $PORT and $((PORT + 1)), on nodes 1 and 2" >&2
  start_instance target/bench-galera-1.log "$PORT" "127.0.0.1:${galera_ports[0]}/$GALERA_DB" app_exec
  start_instance target/bench-galera-2.log "$((PORT + 1))" "127.0.0.1:${galera_ports[1]}/$GALERA_DB" app_exec
  run_driver -Dbench.only="${galera_only:-none}" -Dbench.deployment=galera-2 -Dbench.db.name=$GALERA_DB \
    -Dbench.db.port="${galera_ports[0]},${galera_ports[1]}" -Dbench.galera.ports="$(joined "${galera_ports[@]}")" \
    -Dbench.limits.from=src/bench/summary.jsonl -Dbench.app.java.opts="$JAVA_OPTS"
  stop_apps
  stop_cluster
  # about 1 GB of data directories; after a failure (the script exits before this) they stay for a look
  rm -rf target/galera/bench
  echo >&2
  java -cp "$classpath" io.payonce.bench.Comparison src/bench galera || { ((driver_rc)) || driver_rc=1; }
fi

# The ten-million-row pass, on a private server of its own.
if [[ -n ${BENCH_ROWS:-} ]]; then source scripts/bench-rows.sh; fi
[[ $EXTERNAL == 0 ]] || external_pass
exit "$driver_rc"
