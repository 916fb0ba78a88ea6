#!/usr/bin/env bash
# The native executable, built and tested. Assembles the native-image toolchain of
# ../shared/native-toolchain (GraalVM 25's image builder from Maven Central, Debian's static JDK
# libraries, stand-ins for the pieces GraalVM does not publish) into a cache directory unless it is
# there already, then runs `./mvnw clean verify -Dnative` with it: the executable
# target/payonce-<version>-runner and the *IT tests of the packaged application against it (the
# @QuarkusTest classes, which run on the JVM whatever the packaging, are left to scripts/test.sh).
# `clean`, so that no JVM package of an earlier build is left in target/ for a test to start instead.
#
#   scripts/native.sh                             the toolchain if missing, then the build and every test
#   scripts/native.sh -Dit.test=MultiInstanceIT   further arguments go to Maven
#   NATIVE_TOOLCHAIN_HOME=/dir scripts/native.sh  the toolchain's directory (default
#                                                 ~/.cache/payonce-native-toolchain), assembled there if absent
#   NATIVE_TOOLCHAIN_SOURCE=/dir ...              the folder holding setup.sh (default ../shared/native-toolchain,
#                                                 beside the repository)
#
# Exits 0 when the build and every test passed; non-zero when one failed; 3, after printing
# "native: skipped: <why>", when the toolchain cannot be assembled on this machine (a download refused, a
# piece missing): nothing was verified, which never counts as a pass. Assembling takes about 20 s after its
# downloads; the image build about 3 to 7 minutes with a peak near 6 GB of memory, so run one at a time.
set -euo pipefail
cd "$(dirname "$0")/.."

SKIPPED=3
toolchain=${NATIVE_TOOLCHAIN_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/payonce-native-toolchain}
source_dir=${NATIVE_TOOLCHAIN_SOURCE:-$(pwd)/../shared/native-toolchain}

skip() {
  echo "native: skipped: $*" >&2
  exit "$SKIPPED"
}

# The toolchain is complete once its driver answers; setup.sh writes the driver last.
toolchain_ready() { [[ -x $1/bin/native-image ]] && "$1/bin/native-image" --version >/dev/null 2>&1; }

if ! toolchain_ready "$toolchain"; then
  [[ -x $source_dir/setup.sh ]] || skip "no toolchain at $toolchain and no setup.sh in $source_dir (set NATIVE_TOOLCHAIN_SOURCE)"
  [[ ! -e $toolchain ]] || skip "$toolchain exists but holds no working native-image; remove it to assemble it again"
  # setup.sh refuses a directory that exists: it assembles into a fresh one, moved into place only when whole
  partial=$toolchain.partial.$$
  log=$toolchain.setup.log
  mkdir -p "$(dirname "$toolchain")"
  echo "native: assembling the toolchain into $toolchain (log: $log)" >&2
  status=0
  "$source_dir/setup.sh" "$partial" >"$log" 2>&1 || status=$?
  if ((status != 0)) || ! toolchain_ready "$partial"; then
    rm -rf "$partial"
    # setup.sh stops at the first failed step, often a download whose own output it silences
    last=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -v '^[[:space:]]*$' | tail -n 1 || true)
    skip "the toolchain could not be assembled: setup.sh exited $status, its last line: '${last:-none}' (log: $log)"
  fi
  mv "$partial" "$toolchain"
fi
echo "native: toolchain $toolchain ($("$toolchain/bin/native-image" --version | head -n 1))" >&2

scripts/services.sh --test-tools >&2
source scripts/java25.sh

# GraalVM's own driver runs the image builder with --add-modules=ALL-DEFAULT, so that the application's
# libraries see every JDK module (MariaDB's JDBC driver uses jdk.net); the toolchain's stand-in driver
# does not, and the build then fails on jdk.net.ExtendedSocketOptions. Passed here, to the builder's JVM,
# as the missing piece of this toolchain; with GraalVM's driver it repeats what that driver does.
# The @QuarkusTest classes run on the JVM whatever the packaging, as the README's test command runs them
# already: skipped here, so this command is the executable and the tests of the packaged application.
# The toolchain's C support lacks the two JVM_* functions the JDK's container metrics call
# (scripts/native-shim/container_support.c): compiled here, outside target/ (which `clean` empties), and
# linked into the executable.
shim_dir=${XDG_CACHE_HOME:-$HOME/.cache}/payonce-native-shim
mkdir -p "$shim_dir"
gcc -c -O2 -fPIC -o "$shim_dir/container_support.o" scripts/native-shim/container_support.c
./mvnw -B clean verify -Dnative \
  -Dquarkus.native.graalvm-home="$toolchain" \
  -Dquarkus.native.additional-build-args-append=-J--add-modules=ALL-DEFAULT,-H:NativeLinkerOption="$shim_dir/container_support.o" \
  -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false \
  "$@"
