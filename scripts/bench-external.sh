# shellcheck shell=bash
# The external pass of scripts/bench.sh, which sources this file before it starts anything (checking the
# pass's settings) and calls external_pass after its sandbox passes. Measures the service, not its
# sandbox: every target charges an external channel that answers every charge SUCCEEDED at once
# (InstantChannel, a process of its own on port BENCH_PORT + 9), with its sandbox off,
# payonce.gateway.client-auth=none and the tracing exporter off. The targets are all started at once, each
# on its own port (BENCH_PORT + 10, + 11 ...) and database (BENCH_DB_<target>, created empty), then the
# driver (ExternalPass) warms each and alternates rounds of unique and replay between them:
#
#   jvm               always: the packaged application (target/quarkus-app), JAVA_OPTS and the AOT cache as run.sh
#   native            with BENCH_NATIVE: that executable
#   baseline-jvm      with BENCH_BASELINE_JVM=<a quarkus-app folder, or a folder or project holding one>:
#                     the code a comparison starts from, packaged, run as the JVM target is (with its
#                     own AOT cache, app.aot, if it has one; an AppCDS archive of a fast-jar is not used)
#   baseline-native   with BENCH_BASELINE_NATIVE=<executable>: the same as a native executable
#   seed              with BENCH_SEED=<the peers' seed-go>: the seed design's port (../shared/peers), its
#                     own database BENCH_DB_seed, its channel a sleep of 0 ms
#
# BENCH_EXTERNAL_ROUNDS (3) rounds; BENCH_EXTERNAL_WARMUP_MAX_MS (120000) bounds each target's warm-up. Writes src/bench/report-external.txt and comparison-external.txt and
# adds its lines to summary.jsonl. About 1.5 minutes with the JVM target alone (a minute of it the
# warm-up), about 5.5 with all five (two JVM warm-ups, three of 15 s, 3 rounds of 5 targets).

EXTERNAL_ROUNDS=${BENCH_EXTERNAL_ROUNDS:-3}
BASELINE_JVM=${BENCH_BASELINE_JVM:-}
BASELINE_NATIVE=${BENCH_BASELINE_NATIVE:-}
SEED=${BENCH_SEED:-}
if [[ -n $BASELINE_JVM ]]; then
  for dir in "$BASELINE_JVM" "$BASELINE_JVM/quarkus-app" "$BASELINE_JVM/target/quarkus-app"; do
    if [[ -f $dir/quarkus-run.jar ]]; then BASELINE_JVM=$(realpath "$dir"); break; fi
  done
  [[ -f $BASELINE_JVM/quarkus-run.jar ]] ||
    { echo "bench.sh: BENCH_BASELINE_JVM=$BASELINE_JVM holds no quarkus-app/quarkus-run.jar" >&2; exit 1; }
fi
for exe in "$BASELINE_NATIVE" "$SEED"; do
  [[ -z $exe || (-x $exe && -f $exe) ]] || { echo "bench.sh: $exe is not an executable file" >&2; exit 1; }
done
[[ -z $BASELINE_NATIVE ]] || BASELINE_NATIVE=$(realpath "$BASELINE_NATIVE")
[[ -z $SEED ]] || SEED=$(realpath "$SEED")

# Starts the instant channel on $1, watching this script: it stops by itself when the script is gone.
start_channel() {
  local port=$1 out=target/bench-channel.out
  require_free "$port"
  : >"$out"
  java -Xms32m -Xmx64m -XX:+UseSerialGC -cp "$classpath" io.payonce.bench.InstantChannel "$port" $$ >"$out" 2>&1 9>&- &
  channel_pid=$!
  app_pids+=("$channel_pid") app_ports+=("$port")
  for _ in $(seq 1 300); do # 30 s at most
    grep -q '^ready' "$out" && return 0
    kill -0 "$channel_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "bench.sh: the instant channel did not start; its output ($out):" >&2
  tail -n 20 "$out" >&2
  exit 1
}

# Starts the seed's port on $1 against database $2 (made empty, its tables created by -schema-only) and
# measures its start-up as start_instance does, without a health endpoint: ready is its port open.
start_seed() {
  local port=$1 database=$2 log=target/bench-seed.log dsn started_ns ready_ns pid idle
  dsn="root:@tcp(127.0.0.1:3306)/$database?charset=utf8mb4&parseTime=True&loc=Local"
  "$mysql_cli" -h127.0.0.1 -P3306 -uroot -e "DROP DATABASE IF EXISTS \`$database\`"
  SEED_DSN=$dsn "$SEED" -schema-only >"$log" 2>&1 || { echo "bench.sh: $SEED -schema-only failed ($log)" >&2; exit 1; }
  require_free "$port"
  started_ns=$(date +%s%N)
  SEED_DSN=$dsn SEED_HOST=127.0.0.1 SEED_PORT=$port SEED_CHANNEL_SLEEP_MS=0 GIN_MODE=release "$SEED" >>"$log" 2>&1 9>&- &
  pid=$!
  app_pids+=("$pid") app_ports+=("$port")
  for _ in $(seq 1 300); do # 30 s at most
    port_open "$port" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  port_open "$port" || { echo "bench.sh: the seed did not start; its log ($log):" >&2; tail -n 20 "$log" >&2; exit 1; }
  ready_ns=$(date +%s%N)
  sleep 3
  idle=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
  external_props+=("-Dbench.target.seed=$port,$pid,$database,$(((ready_ns - started_ns) / 1000000)),$idle"
    "-Dbench.target.seed.command=$SEED (SEED_CHANNEL_SLEEP_MS=0 GIN_MODE=release, its database/sql defaults)")
  echo "bench.sh: seed on port $port ready in $(((ready_ns - started_ns) / 1000000)) ms, idle RSS $idle KiB" >&2
}

# Starts PayOnce target $1 as "${@:3}" (app_exec or native_exec) on port $2, its database made empty, charging
# the instant channel; adds it to the driver's settings.
start_target() {
  local name=$1 port=$2 database=${DB}_${1//-/_} command=$3
  shift 3
  "$mysql_cli" -h127.0.0.1 -P3306 -uroot -e "DROP DATABASE IF EXISTS \`$database\`; CREATE DATABASE \`$database\`"
  runtime=$name
  start_instance "target/bench-external-$name.log" "$port" "127.0.0.1:3306/$database" "$@"
  external_props+=("-Dbench.target.$name=$port,${app_pids[-1]},$database,${startups[-1]},${idle_rsss[-1]}"
    "-Dbench.target.$name.command=$command")
}

external_pass() {
  # five targets' warm-ups and rounds on a busy machine can outlast the sandbox passes' bound
  local names=(jvm) port=$((PORT + 10)) channel=$((PORT + 9)) external_props=() driver_limit=1800
  quiet_wait
  echo "bench.sh: $quiet; the external pass: starting the instant channel on port $channel and the targets" >&2
  start_channel "$channel"
  local instance_env=(PAYONCE_SANDBOX_ENABLED=false "PAYONCE_CHANNEL_URL=http://127.0.0.1:$channel"
    QUARKUS_OTEL_SDK_DISABLED=true)
  start_target jvm $((port++)) "java $JAVA_OPTS -jar target/quarkus-app/quarkus-run.jar (AOT cache trained)" app_exec
  if [[ -n $NATIVE ]]; then
    names+=(native)
    start_target native $((port++)) "$NATIVE ${BENCH_NATIVE_OPTS:-}" native_exec
  fi
  if [[ -n $BASELINE_JVM ]]; then
    names+=(baseline-jvm)
    APP_DIR=$BASELINE_JVM start_target baseline-jvm $((port++)) "java $JAVA_OPTS -jar $BASELINE_JVM/quarkus-run.jar" app_exec
  fi
  if [[ -n $BASELINE_NATIVE ]]; then
    names+=(baseline-native)
    native_executable=$BASELINE_NATIVE start_target baseline-native $((port++)) "$BASELINE_NATIVE ${BENCH_NATIVE_OPTS:-}" native_exec
  fi
  if [[ -n $SEED ]]; then
    names+=(seed)
    start_seed $((port++)) "${DB}_seed"
  fi
  launch_driver io.payonce.bench.ExternalPass -Dbench.targets="$(joined "${names[@]}")" "${external_props[@]}" \
    -Dbench.channel.port="$channel" -Dbench.channel.pid="$channel_pid" -Dbench.rounds="$EXTERNAL_ROUNDS" \
    -Dbench.warmup.max.ms="${BENCH_EXTERNAL_WARMUP_MAX_MS:-120000}" \
    -Dbench.append="$([[ $EXTERNAL == only ]] && echo false || echo true)"
  stop_apps
}
