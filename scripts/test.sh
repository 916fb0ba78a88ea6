#!/usr/bin/env bash
# Runs every test: makes sure MariaDB and Redis answer on loopback (installing them if needed),
# and that the binaries the fault tests start themselves are installed (redis-server, nginx),
# then the Maven build with all tests against them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh --test-tools
source scripts/java25.sh
./mvnw -B verify "$@"
