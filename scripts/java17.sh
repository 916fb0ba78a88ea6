# shellcheck shell=bash
# Sourced by run.sh and test.sh: the build targets Java 17. mvnw uses JAVA_HOME if set, else `java`
# on PATH; if that is not a 17, point JAVA_HOME at an installed 17.
java_major() { "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p'; }
if [[ $(java_major "${JAVA_HOME:+$JAVA_HOME/bin/}java" 2>/dev/null) != 17 ]]; then
  for jdk in /usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/temurin-17-* /usr/lib/jvm/*17*; do
    if [[ -x $jdk/bin/java ]]; then export JAVA_HOME=$jdk PATH=$jdk/bin:$PATH; break; fi
  done
fi
[[ $(java_major "${JAVA_HOME:+$JAVA_HOME/bin/}java" 2>/dev/null) == 17 ]] ||
  { echo "Java 17 not found (install openjdk-17-jdk-headless or set JAVA_HOME)" >&2; exit 1; }

# The application's JVM options, in this one place for every script that starts it (run.sh, bench.sh),
# so the benchmark measures the JVM that is run. Override by exporting JAVA_OPTS. Measured here
# (src/bench/report.txt): the serial collector and a 256 MiB heap keep the idle RSS near 160 MiB
# instead of 210 (G1 with a quarter of RAM), small stacks and code cache trim it further.
JAVA_OPTS=${JAVA_OPTS--XX:+UseSerialGC -Xms64m -Xmx256m -Xss512k -XX:ReservedCodeCacheSize=96m -XX:MaxMetaspaceSize=192m}

# Runs the packaged application from its own folder, where the class path recorded in its AppCDS
# archive (app-cds.jsa, built by the package) holds; extra JVM options first, then "--" and the
# application's own arguments.
app_exec() {
  local jvm=()
  while (($#)) && [[ $1 != -- ]]; do jvm+=("$1"); shift; done
  (($#)) && shift
  cd target/quarkus-app || exit 1
  local cds=()
  [[ -f app-cds.jsa ]] && cds=(-XX:SharedArchiveFile=app-cds.jsa)
  # shellcheck disable=SC2086  # JAVA_OPTS is a list of options, split on purpose
  exec java $JAVA_OPTS "${cds[@]}" "${jvm[@]}" -jar quarkus-run.jar "$@"
}
