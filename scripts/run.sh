#!/usr/bin/env bash
# Runs the service on the embedded defaults: local MariaDB and Redis (installed and started if
# missing), the built-in sandbox channel, port 8080. Builds the packaged application first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
source scripts/java25.sh
./mvnw -B -q package -DskipTests
app_train_cds
app_exec -- "$@"
