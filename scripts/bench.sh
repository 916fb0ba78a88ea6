#!/usr/bin/env bash
# The benchmark: builds the packaged application, starts it on port 18090 against a fresh database
# `payonce_bench` on the local MariaDB and the local Redis (sandbox channel, JAVA_OPTS from
# java17.sh), measures its start-up and idle memory, then runs the load driver
# (src/test/java/io/payonce/bench) and stops the application. Writes src/bench/report.txt,
# summary.jsonl and latency.svg; prints the report. About 3.5 minutes with a warm Maven cache (a
# minute of it the warm-up, until the application's JIT has settled), plus up to BENCH_QUIET_WAIT
# (180) seconds when other work keeps the machine busy at the start.
#
#   scripts/bench.sh                    the full run
#   BENCH_SCALE=0.2 scripts/bench.sh    every N scaled (a quick look; figures less stable)
#   BENCH_ONLY=limits,replay ...        only these phases (limits,unique,replay,storm,wait)
#   BENCH_JFR=/tmp/app.jfr ...          also record the application with Java Flight Recorder
#                                       (BENCH_JFR_SETTINGS: a .jfc file or name, default profile)
#   BENCH_DRIVER_JFR=/tmp/driver.jfr    and/or the load driver (to check it is not the bottleneck)
#
# Traffic goes to loopback only. The shared MariaDB and Redis are used, never stopped or flushed:
# the database payonce_bench is dropped and recreated, and Redis keys the run made are deleted.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${BENCH_PORT:-18090}
DB=${BENCH_DB:-payonce_bench}
APP_LOG=target/bench-app.log
# The driver's own JVM: a fixed heap with a large young generation, so its few collections are short
# and rare and do not show up as latency of the application.
DRIVER_OPTS="-Xms1g -Xmx1g -Xmn768m -XX:+UseSerialGC"

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
"$mysql_cli" -h127.0.0.1 -P3306 -uroot -e "DROP DATABASE IF EXISTS \`$DB\`; CREATE DATABASE IF NOT EXISTS \`$DB\`"

app_pid=
stop_app() {
  [[ -z $app_pid ]] || app_stop "$app_pid"
}
trap stop_app EXIT

jfr_opts=()
if [[ -n ${BENCH_JFR:-} ]]; then
  jfr_opts=("-XX:FlightRecorderOptions=stackdepth=256"
    "-XX:StartFlightRecording=filename=$BENCH_JFR,settings=${BENCH_JFR_SETTINGS:-profile},dumponexit=true")
fi

quiet_wait
echo "bench.sh: $quiet; starting the application on port $PORT" >&2
started_ns=$(date +%s%N)
# shellcheck disable=SC2086  # JAVA_OPTS is a list of options, split on purpose
QUARKUS_HTTP_PORT=$PORT \
QUARKUS_DATASOURCE_REACTIVE_URL=mysql://127.0.0.1:3306/$DB \
QUARKUS_DATASOURCE_JDBC_URL=jdbc:mariadb://127.0.0.1:3306/$DB \
  app_exec "${jfr_opts[@]}" >"$APP_LOG" 2>&1 &
app_pid=$!

ready=no
for _ in $(seq 1 1200); do # 60 s at most
  if curl -sf -o /dev/null "http://127.0.0.1:$PORT/q/health/ready"; then ready=yes; break; fi
  kill -0 "$app_pid" 2>/dev/null || break
  sleep 0.05
done
ready_ns=$(date +%s%N)
if [[ $ready != yes ]]; then
  echo "bench.sh: the application did not become ready; its log ($APP_LOG):" >&2
  tail -n 40 "$APP_LOG" >&2
  exit 1
fi
startup_ms=$(((ready_ns - started_ns) / 1000000))
started_in=$(sed -n 's/.* started in \([0-9.]*\)s.*/\1/p' "$APP_LOG" | head -n 1)
sleep 3 # settle: let start-up garbage and lazy initialisation finish before reading idle memory
idle_rss_kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$app_pid/status")
echo "bench.sh: ready in ${startup_ms} ms (Quarkus: started in ${started_in}s), idle RSS ${idle_rss_kib} KiB" >&2

# The machine limits are measured with the application's own client settings: from JAVA_OPTS when it
# sets them, else from application.properties, else Quarkus' default (3.33 caches prepared
# statements for MySQL/MariaDB unless told not to: measured, 0 COM_STMT_PREPARE per payment).
app_setting() {
  local key=$1 fallback=$2 value
  value=$(tr ' ' '\n' <<<"$JAVA_OPTS" | sed -n "s/^-D${key//./\\.}=//p" | tail -n 1)
  [[ -n $value ]] || value=$(sed -n "s/^${key//./\\.}=//p" src/main/resources/application.properties | tail -n 1)
  echo "${value:-$fallback}"
}

if [[ -n ${BENCH_DRIVER_JFR:-} ]]; then
  DRIVER_OPTS+=" -XX:FlightRecorderOptions=stackdepth=256"
  DRIVER_OPTS+=" -XX:StartFlightRecording=filename=$BENCH_DRIVER_JFR,settings=profile,dumponexit=true"
fi

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# a run's own outputs (src/bench) do not make the code it measured a changed one
if [[ -n $(git status --porcelain --untracked-files=no -- . ':!src/bench' 2>/dev/null) ]]; then commit+="+changes"; fi

# shellcheck disable=SC2086  # DRIVER_OPTS likewise
timeout 900 java $DRIVER_OPTS -cp "target/test-classes:$(cat target/bench-classpath.txt)" \
  -Dbench.port=$PORT -Dbench.db.name=$DB \
  -Dbench.db.pool="$(app_setting quarkus.datasource.reactive.max-size 20)" \
  -Dbench.db.cache-prepared="$(app_setting quarkus.datasource.reactive.cache-prepared-statements true)" \
  -Dbench.redis.pool="$(app_setting quarkus.redis.max-pool-size 6)" \
  -Dbench.app.pid="$app_pid" -Dbench.app.startup.ms="$startup_ms" -Dbench.app.started.in="${started_in:-?}" \
  -Dbench.app.idle.rss.kib="$idle_rss_kib" -Dbench.app.java.opts="$JAVA_OPTS" -Dbench.commit="$commit" \
  -Dbench.scale="${BENCH_SCALE:-1}" -Dbench.only="${BENCH_ONLY:-limits,unique,replay,storm,wait}" \
  -Dbench.quiet="$quiet" -Dbench.out=src/bench \
  io.payonce.bench.Bench
