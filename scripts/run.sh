#!/usr/bin/env bash
# Runs the service on the embedded defaults: local MariaDB and Redis (installed and started if
# missing), the built-in sandbox channel, port 8080. Builds the packaged application first.
# The packaged application runs the prod profile, where the sandbox is off unless turned on: this
# script turns it on, as a provider's test mode is chosen (PAYONCE_SANDBOX_ENABLED=false runs without
# it, and then needs PAYONCE_CHANNEL_URL).
#
# The service believes the merchant header as it comes. By default this local run is
# payonce.gateway.client-auth=none, listening on the loopback address only;
# PAYONCE_GATEWAY_CLIENT_AUTH=mtls serves TLS for the gateway of scripts/gateway.sh instead, with the
# development certificates of scripts/dev-ca.sh unless PAYONCE_GATEWAY_TLS_* name others.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
source scripts/java25.sh
./mvnw -B -q package -DskipTests
export PAYONCE_GATEWAY_CLIENT_AUTH=${PAYONCE_GATEWAY_CLIENT_AUTH:-none}
if [[ $PAYONCE_GATEWAY_CLIENT_AUTH == none ]]; then
  export QUARKUS_HTTP_HOST=${QUARKUS_HTTP_HOST:-127.0.0.1}
elif [[ -z ${PAYONCE_GATEWAY_TLS_CERTIFICATE:-} ]]; then
  scripts/dev-ca.sh target/dev-ca
  export PAYONCE_GATEWAY_TLS_CERTIFICATE=$PWD/target/dev-ca/service.crt
  export PAYONCE_GATEWAY_TLS_KEY=$PWD/target/dev-ca/service.key
  export PAYONCE_GATEWAY_TLS_CA=$PWD/target/dev-ca/ca.crt
fi
app_train_aot
export PAYONCE_SANDBOX_ENABLED=${PAYONCE_SANDBOX_ENABLED:-true}
app_exec -- "$@"
