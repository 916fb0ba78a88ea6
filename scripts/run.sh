#!/usr/bin/env bash
# Runs the service on the embedded defaults: local MariaDB and Redis (installed and started if
# missing), the built-in sandbox channel, port 8080. Builds the packaged application first.
# The packaged application runs the prod profile, where the sandbox is off unless turned on: this
# script turns it on, as a provider's test mode is chosen (PAYONCE_SANDBOX_ENABLED=false runs without
# it, and then needs PAYONCE_CHANNEL_URL).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
source scripts/java25.sh
./mvnw -B -q package -DskipTests
app_train_cds
export PAYONCE_SANDBOX_ENABLED=${PAYONCE_SANDBOX_ENABLED:-true}
app_exec -- "$@"
