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
  for _ in $(seq 1 150); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# Replaces the AppCDS archive the package built (classes Quarkus loads while building it) with one
# of every class a real start loads: migrations of a fresh schema, the JDBC and reactive clients,
# Jackson, Redis, the HTTP server. The application is started once on a throwaway database
# (payonce_cds, dropped after) and a random port, and stopped when it listens; the JVM writes the
# archive at exit (-XX:ArchiveClassesAtExit). Measured: ready 0.3 to 0.5 s sooner (2.9 s instead
# of 3.2 to 3.4 s). When anything fails, the package's own archive stays.
app_train_cds() {
  local mysql_cli log=target/cds-training.log pid
  mysql_cli=$(command -v mariadb || command -v mysql) || return 0
  "$mysql_cli" -h127.0.0.1 -P3306 -uroot -e "DROP DATABASE IF EXISTS payonce_cds; CREATE DATABASE payonce_cds" || return 0
  rm -f target/quarkus-app/app-cds-trained.jsa
  # shellcheck disable=SC2086  # JAVA_OPTS is a list of options, split on purpose
  (cd target/quarkus-app && QUARKUS_HTTP_PORT=0 QUARKUS_MANAGEMENT_PORT=0 \
    PAYONCE_SANDBOX_ENABLED=true PAYONCE_GATEWAY_CLIENT_AUTH=none \
    QUARKUS_DATASOURCE_REACTIVE_URL=mysql://127.0.0.1:3306/payonce_cds \
    QUARKUS_DATASOURCE_JDBC_URL=jdbc:mariadb://127.0.0.1:3306/payonce_cds \
    exec java $JAVA_OPTS -XX:ArchiveClassesAtExit=app-cds-trained.jsa -jar quarkus-run.jar) >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do # 60 s at most
    grep -q 'Listening on' "$log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  app_stop "$pid"
  "$mysql_cli" -h127.0.0.1 -P3306 -uroot -e "DROP DATABASE IF EXISTS payonce_cds" || true
  if grep -q 'Listening on' "$log" && [[ -s target/quarkus-app/app-cds-trained.jsa ]]; then
    mv -f target/quarkus-app/app-cds-trained.jsa target/quarkus-app/app-cds.jsa
  else
    rm -f target/quarkus-app/app-cds-trained.jsa
    echo "AppCDS training start failed (see $log); the package's archive is used" >&2
  fi
}

# Runs the packaged application from its own folder (APP_DIR, target/quarkus-app by default), where the
# class path recorded in its AppCDS archive (app-cds.jsa) holds; extra JVM options first, then "--" and
# the application's own arguments.
app_exec() {
  local jvm=()
  while (($#)) && [[ $1 != -- ]]; do jvm+=("$1"); shift; done
  (($#)) && shift
  cd "${APP_DIR:-target/quarkus-app}" || exit 1
  local cds=()
  [[ -f app-cds.jsa ]] && cds=(-XX:SharedArchiveFile=app-cds.jsa)
  # shellcheck disable=SC2086  # JAVA_OPTS is a list of options, split on purpose
  exec java $JAVA_OPTS "${cds[@]}" "${jvm[@]}" -jar quarkus-run.jar "$@"
}
