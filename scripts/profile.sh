#!/usr/bin/env bash
# Where a payment's and a replay's CPU goes: starts the service, charging the peers' instant external
# channel (../shared/peers channel-stub), drives payments (token + pay, a fresh order each) and then replays
# of one finished request with the peers' loadgen, and profiles the service while it serves each phase:
#
#   scripts/profile.sh jvm [OUT]             the packaged JVM application under Flight Recorder: one
#                                            recording per phase, summarised by scripts/profile-jfr.py
#   scripts/profile.sh perf EXE [OUT]        a native executable sampled by `perf record` (cpu-clock: this
#                                            machine's perf has no hardware counters; build the executable
#                                            with -H:-DeleteLocalSymbols to read method names)
#   scripts/profile.sh callgrind EXE [OUT]   a native executable under valgrind's callgrind: instructions,
#                                            not seconds, so the counts repeat whatever else the machine
#                                            runs (about 50 times slower; fewer operations by default)
#
# Each phase is recorded on its own, after a warm-up that is not (connection pools filled, lazy set-up done;
# for the JVM, until its JIT compilers settle as the benchmark's warm-up does). The report, OUT/summary.txt
# (OUT defaults to target/profile-MODE), gives the operations of each phase, the service's CPU per operation
# (from /proc, or instructions per operation under callgrind, background subtracted) and the methods that
# take it. Variables: PROFILE_PAYMENTS, PROFILE_REPLAYS (counts per phase), PROFILE_C (concurrency, 16; 2
# under callgrind). It uses the local MariaDB (database payonce_profile, dropped and created again), Redis
# db 14, ports 18490/19490 and 18471; it stops whatever it started. The peers are built into
# ~/.cache/payonce-peers by ../shared/peers/build.sh when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:?"usage: scripts/profile.sh jvm|perf|callgrind [EXE] [OUT]"}
exe=
if [[ $mode != jvm ]]; then
  exe=$(realpath "${2:?"scripts/profile.sh $mode needs the native executable"}")
  shift
fi
out=$(realpath -m "${2:-target/profile-$mode}")
rm -rf "$out" && mkdir -p "$out"

PORT=18490 MANAGEMENT=19490 CHANNEL=18471 DB=payonce_profile REDIS_DB=14
case $mode in
  callgrind) payments=${PROFILE_PAYMENTS:-100} replays=${PROFILE_REPLAYS:-1000} c=${PROFILE_C:-2} ;;
  *) payments=${PROFILE_PAYMENTS:-6000} replays=${PROFILE_REPLAYS:-60000} c=${PROFILE_C:-16} ;;
esac

DB_NAME=$DB scripts/services.sh
source scripts/java25.sh
source scripts/peers.sh
peers_require loadgen channel-stub
peers=$PEERS_BIN
mysql_cli=$(command -v mariadb || command -v mysql)
"$mysql_cli" -h127.0.0.1 -uroot -e "DROP DATABASE IF EXISTS $DB; CREATE DATABASE $DB"
redis-cli -n "$REDIS_DB" flushdb >/dev/null

pids=()
cleanup() { local p; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

STUB_ADDR=127.0.0.1:$CHANNEL "$peers/channel-stub" >"$out/channel.log" 2>&1 &
pids+=($!)

export QUARKUS_HTTP_PORT=$PORT QUARKUS_MANAGEMENT_PORT=$MANAGEMENT QUARKUS_HTTP_HOST=127.0.0.1 \
  PAYONCE_GATEWAY_CLIENT_AUTH=none PAYONCE_SANDBOX_ENABLED=false PAYONCE_CHANNEL_URL=http://127.0.0.1:$CHANNEL \
  QUARKUS_DATASOURCE_REACTIVE_URL=mysql://127.0.0.1:3306/$DB QUARKUS_DATASOURCE_JDBC_URL=jdbc:mariadb://127.0.0.1:3306/$DB \
  QUARKUS_REDIS_HOSTS=redis://127.0.0.1:6379/$REDIS_DB
case $mode in
  jvm)
    ./mvnw -B -q package -DskipTests
    (app_exec -XX:FlightRecorderOptions=stackdepth=256 -- >"$out/app.log" 2>&1) &
    ;;
  perf)
    (cd target && exec "$exe" >"$out/app.log" 2>&1) &
    ;;
  callgrind)
    (cd "$out" && exec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/callgrind.%p" \
      "$exe" >"$out/app.log" 2>&1) &
    ;;
  *) echo "profile.sh: unknown mode $mode" >&2; exit 1 ;;
esac
pids+=($!)
for _ in $(seq 1 1200); do # 600 s at most: callgrind starts slowly
  curl -sf -o /dev/null "http://127.0.0.1:$MANAGEMENT/q/health/ready" && break
  sleep 0.5
done
curl -sf -o /dev/null "http://127.0.0.1:$MANAGEMENT/q/health/ready" || { tail -n 30 "$out/app.log" >&2; exit 1; }
app=$(ss -ltnpH "sport = :$PORT" | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1)

peers_loadgen_config "http://127.0.0.1:$PORT" "$DB" m_profile >"$out/loadgen.json"
load() { # mode n c
  timeout 3600 "$peers/loadgen" -target quarkus -config "$out/loadgen.json" -mode "$1" -n "$2" -c "$3" 2>&1 |
    grep '^RESULT' || true
}
ticks() { awk '{print $14 + $15}' "/proc/$app/stat"; }
# CPU ticks of the JVM's JIT compiler threads (fields counted after the command name, which has a space)
jit_ticks() {
  local t
  for t in /proc/"$app"/task/*; do
    [[ $(cat "$t/comm" 2>/dev/null) == C[12]* ]] && sed 's/^.*) //' "$t/stat" | awk '{print $12 + $13}'
  done | awk '{s += $1} END {print s + 0}'
}
jit_settled() { # the compilers took under a tenth of the service's CPU over a round of 2,000 payments
  local jit0 all0
  jit0=$(jit_ticks) all0=$(ticks)
  load unique 2000 "$c" >/dev/null
  (( ($(jit_ticks) - jit0) * 10 < $(ticks) - all0 ))
}

echo "profile.sh: $mode, warming up" >&2
if [[ $mode == callgrind ]]; then
  load unique 50 "$c" >/dev/null; load replay 200 "$c" >/dev/null
else
  for _ in $(seq 1 24); do jit_settled && break; done
  load replay 20000 "$c" >/dev/null
fi

summary=$out/summary.txt
{
  echo "profile.sh $mode ${exe:+$exe }at $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "payments: token + pay, a fresh order each, c=$c; replays: copies of one finished request, c=$c"
} >"$summary"
phase() { # name loadgen-mode n
  local name=$1 before after result
  local recorder=
  case $mode in
    jvm) jcmd "$app" JFR.start name="$name" settings=profile jdk.ExecutionSample#period=1ms filename="$out/$name.jfr" >/dev/null ;;
    perf) perf record -F 997 -g -p "$app" -o "$out/$name.perf.data" >/dev/null 2>&1 & recorder=$! ;;
    callgrind) callgrind_control -i on "$app" >/dev/null ;;
  esac
  before=$(ticks)
  result=$(load "$2" "$3" "$c")
  after=$(ticks)
  case $mode in
    jvm) jcmd "$app" JFR.stop name="$name" >/dev/null ;;
    perf) kill -INT "$recorder"; wait "$recorder" || true ;;
    callgrind) callgrind_control -d "$name" "$app" >/dev/null; callgrind_control -i off "$app" >/dev/null ;;
  esac
  echo "$name: $result" >>"$summary"
  echo "$name: service CPU $(((after - before) * 1000000 / $(getconf CLK_TCK) / $3)) us per operation (/proc)" >>"$summary"
}
if [[ $mode == callgrind ]]; then
  # what the service does with no request, to subtract from each phase by its duration
  callgrind_control -i on "$app" >/dev/null; sleep 20; callgrind_control -d idle "$app" >/dev/null
  callgrind_control -i off "$app" >/dev/null
fi
phase payments unique "$payments"
phase replays replay "$replays"
cleanup
pids=()
sleep 3

case $mode in
  jvm)
    for name in payments replays; do
      echo "== $name (JFR execution samples)" >>"$summary"
      jfr print --events jdk.ExecutionSample --stack-depth 200 "$out/$name.jfr" | python3 scripts/profile-jfr.py >>"$summary"
    done
    ;;
  perf)
    for name in payments replays; do
      echo "== $name (perf, cpu-clock samples, self)" >>"$summary"
      # the call graphs recorded stay in the file (perf report -i ... for them); the summary lists self time
      { perf report -i "$out/$name.perf.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null |
        grep '%' | grep -v '^#' | head -n 60 || true; } >>"$summary"
    done
    ;;
  callgrind)
    idle_per_s=$(awk '/^totals:/ {print $2 / 20}' "$out"/callgrind.*.1)
    for name in payments replays; do
      file=$(grep -l "^desc: Trigger: dump $name" "$out"/callgrind.* | head -n 1)
      total=$(awk '/^totals:/ {print $2}' "$file")
      wall=$(sed -n "s/^$name: .*wall_s=\([0-9.]*\).*/\1/p" "$summary")
      n=$([[ $name == payments ]] && echo "$payments" || echo "$replays")
      echo "$name: $(awk -v t="$total" -v w="$wall" -v i="$idle_per_s" -v n="$n" 'BEGIN {printf "%.0f", (t - w * i) / n}') instructions per operation (idle subtracted)" >>"$summary"
      echo "== $name (callgrind, inclusive)" >>"$summary"
      # head stops reading early: the annotation's writer then ends on SIGPIPE, which is no failure here
      { callgrind_annotate --inclusive=yes "$file" 2>/dev/null | sed -n '/Ir/,$p' | head -n 80 || true; } >>"$summary"
    done
    ;;
esac
cat "$summary"
