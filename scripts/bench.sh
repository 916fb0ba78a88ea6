#!/usr/bin/env bash
# The benchmark: builds the packaged application, starts it on port 18090 against a fresh database
# `payonce_bench` on the local MariaDB and the local Redis (sandbox channel, JAVA_OPTS from
# java17.sh), measures its start-up and idle memory, then runs the load driver
# (src/test/java/io/payonce/bench) and stops the application; with BENCH_NATIVE, then the same
# against the native executable (below). Writes src/bench/report.txt, summary.jsonl and latency.svg;
# prints the report. About 3.5 minutes with a warm Maven cache (a minute of it the warm-up, until
# the application's JIT has settled), 1.5 more for the native pass, plus up to BENCH_QUIET_WAIT (180)
# seconds, before each pass, when other work keeps the machine busy.
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
#
# Traffic goes to loopback only. The shared MariaDB and Redis are used, never stopped or flushed:
# the database payonce_bench is dropped and recreated, and Redis keys the run made are deleted.
# src/bench holds the outputs of one invocation: a run without BENCH_NATIVE removes those of an
# earlier native pass.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${BENCH_PORT:-18090}
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

DB_NAME=$DB scripts/services.sh
source scripts/java17.sh

port_open() { timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$1" 2>/dev/null; }
if port_open "$PORT"; then
  echo "bench.sh: port $PORT is in use; stop what listens there first" >&2
  exit 1
fi

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
app_train_cds

mysql_cli=$(command -v mariadb || command -v mysql)
recreate_db() {
  "$mysql_cli" -h127.0.0.1 -P3306 -uroot -e "DROP DATABASE IF EXISTS \`$DB\`; CREATE DATABASE IF NOT EXISTS \`$DB\`"
}

app_pid=
stop_app() {
  [[ -z $app_pid ]] || app_stop "$app_pid"
  app_pid=
}
trap stop_app EXIT

jfr_opts=()
if [[ -n ${BENCH_JFR:-} ]]; then
  jfr_opts=("-XX:FlightRecorderOptions=stackdepth=256"
    "-XX:StartFlightRecording=filename=$BENCH_JFR,settings=${BENCH_JFR_SETTINGS:-profile},dumponexit=true")
fi

# The native executable, from the folder the JVM pass runs in (target/quarkus-app), so that both find
# the same (no) config/application.properties and .env there; it takes no JVM options.
native_exec() {
  cd target/quarkus-app || exit 1
  # shellcheck disable=SC2086  # BENCH_NATIVE_OPTS is a list of options, split on purpose
  exec "$NATIVE" ${BENCH_NATIVE_OPTS:-}
}

# Starts the application as "$@" (app_exec or native_exec) on a fresh database once the machine is
# quiet, and measures its start-up: sets app_pid, startup_ms, started_in and idle_rss_kib.
start_app() {
  local log=$1 ready=no started_ns ready_ns
  shift
  recreate_db
  if port_open "$PORT"; then
    echo "bench.sh: port $PORT is in use; stop what listens there first" >&2
    exit 1
  fi
  quiet_wait
  echo "bench.sh: $quiet; starting $runtime on port $PORT" >&2
  started_ns=$(date +%s%N)
  QUARKUS_HTTP_PORT=$PORT \
  QUARKUS_DATASOURCE_REACTIVE_URL=mysql://127.0.0.1:3306/$DB \
  QUARKUS_DATASOURCE_JDBC_URL=jdbc:mariadb://127.0.0.1:3306/$DB \
    "$@" >"$log" 2>&1 &
  app_pid=$!
  for _ in $(seq 1 1200); do # 60 s at most
    if curl -sf -o /dev/null "http://127.0.0.1:$PORT/q/health/ready"; then ready=yes; break; fi
    kill -0 "$app_pid" 2>/dev/null || break
    sleep 0.05
  done
  ready_ns=$(date +%s%N)
  if [[ $ready != yes ]]; then
    echo "bench.sh: the application ($runtime) did not become ready; its log ($log):" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  startup_ms=$(((ready_ns - started_ns) / 1000000))
  started_in=$(sed -n 's/.* started in \([0-9.]*\)s.*/\1/p' "$log" | head -n 1)
  sleep 3 # settle: let start-up garbage and lazy initialisation finish before reading idle memory
  idle_rss_kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$app_pid/status")
  echo "bench.sh: $runtime ready in ${startup_ms} ms (Quarkus: started in ${started_in}s), idle RSS ${idle_rss_kib} KiB" >&2
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

# Runs the load driver against the application started last, with the pass's own settings in "$@";
# keeps the worst exit status in driver_rc (2: a phase could not run) and goes on.
driver_rc=0
run_driver() {
  local rc=0 opts=$DRIVER_OPTS
  # the driver's recording is of the JVM pass's driver only, which a second pass would overwrite
  if [[ -n ${BENCH_DRIVER_JFR:-} && $runtime == jvm ]]; then
    opts+=" -XX:FlightRecorderOptions=stackdepth=256"
    opts+=" -XX:StartFlightRecording=filename=$BENCH_DRIVER_JFR,settings=profile,dumponexit=true"
  fi
  # shellcheck disable=SC2086  # opts is a list of options, split on purpose
  timeout 900 java $opts -cp "$classpath" \
    -Dbench.port=$PORT -Dbench.db.name=$DB \
    -Dbench.db.pool="$(app_setting quarkus.datasource.reactive.max-size 20)" \
    -Dbench.db.cache-prepared="$(app_setting quarkus.datasource.reactive.cache-prepared-statements true)" \
    -Dbench.redis.pool="$(app_setting quarkus.redis.max-pool-size 6)" \
    -Dbench.runtime="$runtime" -Dbench.app.pid="$app_pid" -Dbench.app.startup.ms="$startup_ms" \
    -Dbench.app.started.in="${started_in:-?}" -Dbench.app.idle.rss.kib="$idle_rss_kib" -Dbench.commit="$commit" \
    -Dbench.scale="${BENCH_SCALE:-1}" -Dbench.quiet="$quiet" -Dbench.out=src/bench "$@" \
    io.payonce.bench.Bench || rc=$?
  ((rc <= driver_rc)) || driver_rc=$rc
}

# The JVM pass: the packaged application as run.sh runs it.
rm -f src/bench/report-native.txt src/bench/latency-native.svg src/bench/comparison.txt
runtime=jvm
start_app target/bench-app.log app_exec "${jfr_opts[@]}"
run_driver -Dbench.only="$ONLY" -Dbench.app.java.opts="$JAVA_OPTS"
stop_app
[[ -n $NATIVE ]] || exit "$driver_rc"
# The native pass takes its bounds from the limits the JVM pass wrote to summary.jsonl; if that driver
# did not finish (exit status other than 0, or 2 for a phase that could not run), the file is an
# earlier run's and goes, so that the comparison cannot pair the native pass with it.
if ((driver_rc != 0 && driver_rc != 2)); then rm -f src/bench/summary.jsonl; fi

# The native pass: the same port, database (created empty again) and QUARKUS_* variables.
native_only=$(tr ',' '\n' <<<"$ONLY" | grep -Fx -f <(tr ',' '\n' <<<"$NATIVE_PHASES") | paste -sd, -) || true
# the GraalVM release the executable was built with, as it records it
native_vm=$(grep -a -o -m 1 'com\.oracle\.svm\.core\.VM=[[:print:]]*' "$NATIVE" | head -n 1 | cut -d= -f2) || true
runtime=native
start_app target/bench-native.log native_exec
run_driver -Dbench.only="${native_only:-none}" -Dbench.limits.from=src/bench/summary.jsonl \
  -Dbench.app.executable="$NATIVE" -Dbench.app.native.opts="${BENCH_NATIVE_OPTS:-}" -Dbench.app.vm="${native_vm:-unknown}"
stop_app

echo >&2
java -cp "$classpath" io.payonce.bench.Comparison src/bench || { ((driver_rc)) || driver_rc=1; }
exit "$driver_rc"
