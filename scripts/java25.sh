# shellcheck shell=bash
# Sourced by every script that builds or runs the service: the build targets Java 25. mvnw uses
# JAVA_HOME if set, else `java` on PATH; if that is not a 25, point JAVA_HOME at an installed 25
# (Temurin 25 under /usr/lib/jvm on every machine here; the default `java` may be older).
java_major() { "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p'; }
if [[ $(java_major "${JAVA_HOME:+$JAVA_HOME/bin/}java" 2>/dev/null) != 25 ]]; then
  for jdk in /usr/lib/jvm/temurin-25-* /usr/lib/jvm/java-25-openjdk-* /usr/lib/jvm/*25*; do
    if [[ -x $jdk/bin/java ]]; then export JAVA_HOME=$jdk PATH=$jdk/bin:$PATH; break; fi
  done
fi
[[ $(java_major "${JAVA_HOME:+$JAVA_HOME/bin/}java" 2>/dev/null) == 25 ]] ||
  { echo "Java 25 not found (install Temurin 25 or openjdk-25-jdk-headless, or set JAVA_HOME)" >&2; exit 1; }

# The application's JVM options, in this one place for every script that starts it (run.sh, bench.sh),
# so the benchmark measures the JVM that is run. Override by exporting JAVA_OPTS. Measured here
# (src/bench/report.txt): the serial collector and a 256 MiB heap keep the idle RSS near 160 MiB
# instead of 210 (G1 with a quarter of RAM), small stacks and code cache trim it further.
JAVA_OPTS=${JAVA_OPTS--XX:+UseSerialGC -Xms64m -Xmx256m -Xss512k -XX:ReservedCodeCacheSize=96m -XX:MaxMetaspaceSize=192m}

# Stops the application started in the background as process $1: SIGTERM, then its graceful
# shutdown (1 s readiness delay, in-flight requests bounded at 10 s), SIGKILL after 15 s.
app_stop() {
  kill -0 "$1" 2>/dev/null || return 0
  kill -TERM "$1" 2>/dev/null || true
  app_wait "$1" 150 && return 0
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# Waits up to $2 tenths of a second for process $1 to end; answers whether it did.
app_wait() {
  local _
  for _ in $(seq 1 "$2"); do kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null; return 0; }; sleep 0.1; done
  return 1
}

# Whether something listens on loopback port $1.
port_open() { timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$1" 2>/dev/null; }

# Real payments, through the HTTP API of the application on port $1: orders, tokens, payments, a replay
# of each, refunds and reads, AOT_TRAIN_PAYMENTS (2000) of them, sixteen at a time. A few curl processes
# carry every request (a config file of requests each), so the application, not process starts, is what
# the time goes to. Prints how many payments were answered 200.
aot_training_load() {
  local base=http://127.0.0.1:$1 n=${AOT_TRAIN_PAYMENTS:-2000} dir=target/aot-training i tokens refunds
  # one request in curl's config syntax: method, path, body ("" for none), extra header ("" for none)
  aot_request() {
    printf 'url = "%s%s"\nrequest = "%s"\nheader = "X-Merchant-Id: m_aot_training"\n' "$base" "$2" "$1"
    [[ -z ${3:-} ]] || printf 'header = "Content-Type: application/json"\ndata = "%s"\n' "${3//\"/\\\"}"
    [[ -z ${4:-} ]] || printf 'header = "%s"\n' "${4//\"/\\\"}"
    # the body, then the status on a line of its own
    printf 'write-out = "\\n%%{http_code}\\n"\nnext\n'
  }
  # requests on standard input (the last "next" dropped), answers on standard output
  aot_curl_many() { sed '$d' | timeout "$1" curl --no-progress-meter --parallel --parallel-max 16 --max-time 10 -K - 2>>"$dir/curl.log"; }
  rm -rf "$dir" && mkdir -p "$dir"
  for ((i = 0; i < n; i++)); do
    aot_request POST /orders "{\"order_no\":\"aot-$i\",\"amount\":1999,\"currency\":\"USD\"}"
  done | aot_curl_many 120 >"$dir/orders.out" || true
  mapfile -t tokens < <(for ((i = 0; i < n; i++)); do aot_request POST /tokens; done |
    aot_curl_many 120 | grep -o '"token":"[^"]*"' | cut -d'"' -f4)
  ((${#tokens[@]})) || { echo 0; return; }
  aot_pays() {
    for ((i = 0; i < ${#tokens[@]}; i++)); do
      aot_request POST /pay "{\"order_no\":\"aot-$i\",\"request_no\":\"aot-$i\",\"amount\":1999}" "Idempotency-Key: \"${tokens[$i]}\""
    done
  }
  aot_pays | aot_curl_many 180 >"$dir/pay.out" || true
  # the same requests again: answered from what was stored, nothing charged again
  aot_pays | aot_curl_many 180 >"$dir/replay.out" || true
  mapfile -t refunds < <(for ((i = 0; i < n / 10; i++)); do aot_request POST /tokens; done |
    aot_curl_many 60 | grep -o '"token":"[^"]*"' | cut -d'"' -f4)
  for ((i = 0; i < ${#refunds[@]}; i++)); do
    aot_request POST /refunds "{\"order_no\":\"aot-$i\",\"refund_no\":\"aot-$i\",\"amount\":500}" "Idempotency-Key: \"${refunds[$i]}\""
    aot_request GET "/orders/aot-$i"
    aot_request GET "/payments/aot-$i"
  done | aot_curl_many 60 >"$dir/refund.out" || true
  grep -cx 200 "$dir/pay.out" || true
}

# Trains the JDK's ahead-of-time cache (target/quarkus-app/app.aot; JEPs 483, 514 and 515: the classes
# loaded and linked, and the methods' execution profiles) on a run of real payments. The packaged
# application is started with JAVA_OPTS in recording mode on a throwaway database (AOT_TRAIN_DB,
# payonce_aot, dropped after), its own sandbox as the channel, Redis db AOT_TRAIN_REDIS_DB (0; the keys
# of its merchant deleted after) and a free port; aot_training_load pays through its HTTP API; it is
# stopped, and the cache is made from what it recorded. The cache holds profiles, not compiled methods:
# the JIT still compiles, but no class is parsed, verified or linked at start, and the compilers start
# from the types and branches of real payments. It is tied to the JDK build and to the jars (both checked
# at start) and is made for JAVA_OPTS: a cache the JVM cannot use under other options is refused, wholly
# or in part, with a warning, and the application starts without it (-XX:AOTMode=auto, app_exec). When
# anything fails, no cache is left and the application runs without one.
app_train_aot() {
  local mysql_cli db=${AOT_TRAIN_DB:-payonce_aot} dir=target/quarkus-app log=target/aot-training.log
  local port pid paid redis_db=${AOT_TRAIN_REDIS_DB:-0}
  mysql_cli=$(command -v mariadb || command -v mysql) || return 0
  rm -f "$dir/app.aot" "$dir/app.aotconf" "$dir/app-cds.jsa"
  "$mysql_cli" -h127.0.0.1 -P3306 -uroot -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`" || return 0
  for port in $(shuf -i 20000-29999 -n 20); do port_open "$port" || break; done
  # shellcheck disable=SC2086  # JAVA_OPTS is a list of options, split on purpose
  (cd "$dir" && QUARKUS_HTTP_PORT=$port QUARKUS_MANAGEMENT_PORT=0 \
    PAYONCE_SANDBOX_ENABLED=true PAYONCE_GATEWAY_CLIENT_AUTH=none \
    QUARKUS_REDIS_HOSTS=redis://127.0.0.1:6379/$redis_db \
    QUARKUS_DATASOURCE_REACTIVE_URL=mysql://127.0.0.1:3306/$db \
    QUARKUS_DATASOURCE_JDBC_URL=jdbc:mariadb://127.0.0.1:3306/$db \
    exec java $JAVA_OPTS -XX:AOTMode=record -XX:AOTConfiguration=app.aotconf -jar quarkus-run.jar) >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 1200); do # 120 s at most: recording slows the start
    grep -q 'Listening on' "$log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  paid=0
  grep -q 'Listening on' "$log" && paid=$(aot_training_load "$port")
  # the configuration is written as the JVM exits
  kill -TERM "$pid" 2>/dev/null || true
  app_wait "$pid" 600 || { kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  "$mysql_cli" -h127.0.0.1 -P3306 -uroot -e "DROP DATABASE IF EXISTS \`$db\`" || true
  if command -v redis-cli >/dev/null; then
    redis-cli -n "$redis_db" --scan --pattern 'po:{m_aot_training:*' | xargs -r -n 500 redis-cli -n "$redis_db" DEL >/dev/null || true
  fi
  if ((paid > 0)) && [[ -s $dir/app.aotconf ]]; then
    # shellcheck disable=SC2086  # JAVA_OPTS is a list of options, split on purpose
    (cd "$dir" && timeout 300 java $JAVA_OPTS -XX:AOTMode=create -XX:AOTConfiguration=app.aotconf \
      -XX:AOTCache=app.aot -jar quarkus-run.jar) >>"$log" 2>&1 || rm -f "$dir/app.aot"
  fi
  rm -f "$dir/app.aotconf"
  if [[ -s $dir/app.aot ]]; then
    echo "AOT cache trained on $paid payments: $dir/app.aot, $(du -m "$dir/app.aot" | cut -f1) MiB" >&2
  else
    echo "AOT cache training failed (see $log): the application runs without a cache" >&2
  fi
}

# Runs the packaged application from its own folder (APP_DIR, target/quarkus-app by default), where the
# class path recorded in its AOT cache (app.aot) holds; extra JVM options first, then "--" and the
# application's own arguments. A cache the JVM cannot use (another JDK or jars, a truncated file) is
# ignored with a warning and the application starts without it (-XX:AOTMode=auto, the default with
# -XX:AOTCache; -XX:AOTMode=off turns it off).
app_exec() {
  local jvm=()
  while (($#)) && [[ $1 != -- ]]; do jvm+=("$1"); shift; done
  (($#)) && shift
  cd "${APP_DIR:-target/quarkus-app}" || exit 1
  local aot=()
  [[ -f app.aot ]] && aot=(-XX:AOTCache=app.aot)
  # shellcheck disable=SC2086  # JAVA_OPTS is a list of options, split on purpose
  exec java $JAVA_OPTS "${aot[@]}" "${jvm[@]}" -jar quarkus-run.jar "$@"
}
