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
# so the benchmark measures the JVM that is run. Empty by default: the JVM's own ergonomics (G1, a
# heap of up to 1/4 of RAM) until a measurement says otherwise. Override by exporting JAVA_OPTS.
JAVA_OPTS=${JAVA_OPTS-}
