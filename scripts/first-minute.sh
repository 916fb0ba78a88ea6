#!/usr/bin/env bash
# The first minute of a fresh process: how fast the packaged JVM application serves from the moment it
# is started, beside the seed's design (../shared/peers), both charging a channel that answers at once.
# Rounds alternate between the sides; each round starts its side as a new process on an empty database,
# measures the start-up (exec to ready), then drives `loadgen -mode unique -c 16` (token + pay, a fresh
# order each) for 60 s and counts the payments made in each 10 s from the database.
#
#   scripts/first-minute.sh                    3 rounds of: seed, jvm (the AOT cache), jvm-nocache
#   FM_ROUNDS=1 FM_SIDES="seed jvm" ...        other rounds or sides
#
# Sides: seed (seed-go, SEED_CHANNEL_SLEEP_MS=0), jvm (the package as run.sh runs it: app_exec, with the
# AOT cache that app_train_aot made), jvm-nocache (the same with -XX:AOTMode=off). PayOnce runs the prod
# profile: sandbox off, payonce.gateway.client-auth=none, charging the peers' channel-stub. Orders are
# made by SQL (loadgen's "via": "sql"), so nothing warms the JVM before the timed minute.
#
# Needs the peers' binaries (seed-go, loadgen, channel-stub) in FM_PEERS (default
# ~/.cache/payonce-peers/bin, which ../shared/peers/build.sh fills when they are missing: scripts/peers.sh)
# and a packaged application with its cache (scripts/run.sh or bench.sh build and train it). Ports FM_PORT (18380) and the next (management),
# the stub's FM_STUB_PORT (18371); databases FM_DB (payonce_fm, dropped after) and FM_SEED_DB (seedpeer,
# its tables emptied each round); Redis db FM_REDIS_DB (13; loadgen's keys deleted after). Prints a line
# a round and the medians; writes target/first-minute.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/java25.sh
[[ -z ${FM_PEERS:-} ]] || PEERS_BIN=$FM_PEERS
source scripts/peers.sh
PEERS=$PEERS_BIN
ROUNDS=${FM_ROUNDS:-3}
read -r -a SIDES <<<"${FM_SIDES:-seed jvm jvm-nocache}"
PORT=${FM_PORT:-18380}
STUB_PORT=${FM_STUB_PORT:-18371}
DB=${FM_DB:-payonce_fm}
SEED_DB=${FM_SEED_DB:-seedpeer}
REDIS_DB=${FM_REDIS_DB:-13}
SECONDS_TIMED=60
# more orders than any side pays in a minute, so the load never runs dry
ORDERS=${FM_ORDERS:-100000}
OUT=target/first-minute
mkdir -p "$OUT"
peers_require seed-go loadgen channel-stub
[[ -f target/quarkus-app/quarkus-run.jar ]] || { echo "first-minute.sh: no package: ./mvnw package first" >&2; exit 1; }
mysql_cli=$(command -v mariadb || command -v mysql)
sql() { "$mysql_cli" -h127.0.0.1 -P3306 -uroot -N -e "$@"; }
for p in "$PORT" "$((PORT + 1))" "$STUB_PORT"; do
  if port_open "$p"; then echo "first-minute.sh: port $p is in use" >&2; exit 1; fi
done

pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do app_stop "$pid"; done
  sql "DROP DATABASE IF EXISTS \`$DB\`" || true
  # the answers PayOnce cached for loadgen's merchant
  redis-cli -n "$REDIS_DB" --scan --pattern 'po:{m_loadgen:*' | xargs -r -n 500 redis-cli -n "$REDIS_DB" DEL >/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

STUB_ADDR=127.0.0.1:$STUB_PORT "$PEERS/channel-stub" >"$OUT/channel-stub.log" 2>&1 &
pids+=("$!")
SEED_DSN="root:@tcp(127.0.0.1:3306)/$SEED_DB?charset=utf8mb4&parseTime=True&loc=Local"
SEED_DSN=$SEED_DSN "$PEERS/seed-go" -schema-only 2>"$OUT/seed-schema.log"

# Paid orders so far on side $1, counted in its database.
paid() {
  case $1 in
    seed) sql "SELECT COUNT(*) FROM \`$SEED_DB\`.pay_orders WHERE status = 2" ;;
    *) sql "SELECT COUNT(*) FROM \`$DB\`.orders WHERE status = 'PAID'" ;;
  esac
}

# Starts side $1 on PORT, waits until it is ready; sets pid, startup_ms and startup_cpu_ms.
start_side() {
  local side=$1 log=$OUT/$1.log t0 ready
  t0=$(date +%s%N)
  case $side in
    seed)
      sql "TRUNCATE \`$SEED_DB\`.pay_orders; TRUNCATE \`$SEED_DB\`.pay_records; TRUNCATE \`$SEED_DB\`.idempotent_requests"
      t0=$(date +%s%N)
      SEED_DSN=$SEED_DSN SEED_HOST=127.0.0.1 SEED_PORT=$PORT SEED_CHANNEL_SLEEP_MS=0 GIN_MODE=release \
        "$PEERS/seed-go" >"$log" 2>&1 &
      # no health endpoint: any HTTP answer means it listens
      ready=(curl -s -o /dev/null "http://127.0.0.1:$PORT/") ;;
    jvm | jvm-nocache)
      local extra=()
      [[ $side == jvm ]] || extra=(-XX:AOTMode=off)
      sql "DROP DATABASE IF EXISTS \`$DB\`; CREATE DATABASE \`$DB\`"
      t0=$(date +%s%N)
      (QUARKUS_HTTP_PORT=$PORT QUARKUS_MANAGEMENT_PORT=$((PORT + 1)) \
        PAYONCE_SANDBOX_ENABLED=false PAYONCE_CHANNEL_URL=http://127.0.0.1:$STUB_PORT \
        PAYONCE_GATEWAY_CLIENT_AUTH=none QUARKUS_REDIS_HOSTS=redis://127.0.0.1:6379/$REDIS_DB \
        QUARKUS_DATASOURCE_REACTIVE_URL=mysql://127.0.0.1:3306/$DB \
        QUARKUS_DATASOURCE_JDBC_URL=jdbc:mariadb://127.0.0.1:3306/$DB \
        app_exec "${extra[@]}") >"$log" 2>&1 &
      ready=(curl -sf -o /dev/null "http://127.0.0.1:$((PORT + 1))/q/health/ready") ;;
    *) echo "first-minute.sh: unknown side $side" >&2; exit 1 ;;
  esac
  pid=$!
  pids+=("$pid")
  for _ in $(seq 1 3000); do # 60 s at most
    "${ready[@]}" && break
    kill -0 "$pid" 2>/dev/null || { echo "first-minute.sh: $side exited; its log: $log" >&2; tail -n 20 "$log" >&2; exit 1; }
    sleep 0.02
  done
  startup_ms=$((($(date +%s%N) - t0) / 1000000))
  # the CPU it took to get there (user and system), which other work on the machine disturbs less
  startup_cpu_ms=$(awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$pid/stat")
}

# Drives side $1 for SECONDS_TIMED seconds from the moment loadgen has made its orders; sets counts
# (payments made in each 10 s) and total.
drive() {
  local side=$1 log=$OUT/loadgen-$1.log lg t_start now k before after
  local args=(-mode unique -c 16 -n "$ORDERS" -max-run "$((SECONDS_TIMED + 120))s" -run-id "fm$(date +%s%N)")
  if [[ $side == seed ]]; then
    args+=(-target seed -base "http://127.0.0.1:$PORT" -dsn "root:@tcp(127.0.0.1:3306)/$SEED_DB")
  else
    peers_loadgen_config "http://127.0.0.1:$PORT" "$DB" m_loadgen >"$OUT/loadgen.json"
    args+=(-target quarkus -config "$OUT/loadgen.json")
  fi
  "$PEERS/loadgen" "${args[@]}" >"$log" 2>&1 &
  lg=$!
  for _ in $(seq 1 1200); do # 120 s at most to make the orders
    grep -q '^prepared ' "$log" && break
    kill -0 "$lg" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^prepared ' "$log" || { echo "first-minute.sh: loadgen did not start ($log)" >&2; tail -n 5 "$log" >&2; exit 1; }
  t_start=$(date +%s%N)
  before=$(paid "$side")
  counts=()
  for ((k = 1; k <= SECONDS_TIMED / 10; k++)); do
    now=$(date +%s%N)
    sleep "$(awk -v d=$((t_start + k * 10000000000 - now)) 'BEGIN { printf "%.3f", (d > 0 ? d : 0) / 1e9 }')"
    after=$(paid "$side")
    counts+=($((after - before)))
    before=$after
  done
  kill -TERM "$lg" 2>/dev/null || true
  wait "$lg" 2>/dev/null || true
  total=0
  for k in "${counts[@]}"; do total=$((total + k)); done
}

median() { tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)) }'; }
declare -A startups startup_cpus totals
report=target/first-minute.txt
{
  echo "first minute: loadgen -mode unique -c 16, ${SECONDS_TIMED} s from a fresh process, $ROUNDS round(s) of: ${SIDES[*]}"
  echo "JAVA_OPTS=$JAVA_OPTS; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
} | tee "$report"
for ((round = 1; round <= ROUNDS; round++)); do
  for side in "${SIDES[@]}"; do
    start_side "$side"
    drive "$side"
    app_stop "$pid"
    rates=$(for c in "${counts[@]}"; do printf '%d ' $((c / 10)); done)
    line=$(printf 'round %d %-12s start %5d ms (CPU %5d ms)  first %d s: %6d payments, %5d/s; each 10 s: %s/s' \
      "$round" "$side" "$startup_ms" "$startup_cpu_ms" "$SECONDS_TIMED" "$total" "$((total / SECONDS_TIMED))" "${rates% }")
    echo "$line" | tee -a "$report"
    startups[$side]+="$startup_ms " startup_cpus[$side]+="$startup_cpu_ms " totals[$side]+="$((total / SECONDS_TIMED)) "
  done
done
echo "medians (payments/s over the first ${SECONDS_TIMED} s; start-up, exec to ready, and its CPU time):" | tee -a "$report"
for side in "${SIDES[@]}"; do
  printf '  %-12s %5d/s  start %5d ms (CPU %5d ms)\n' "$side" "$(median <<<"${totals[$side]% }")" \
    "$(median <<<"${startups[$side]% }")" "$(median <<<"${startup_cpus[$side]% }")" | tee -a "$report"
done
