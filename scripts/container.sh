#!/usr/bin/env bash
# The native container, built and run here with podman, behind the gateway.
#
#   scripts/container.sh build   the native executable (scripts/native.sh's toolchain, unless
#                                target/*-runner is there already), the base (scripts/container-base.sh)
#                                and the image localhost/payonce:native (Dockerfile.native-micro)
#   scripts/container.sh up      two service containers and the gateway on the host; prints its URL and
#                                the API key file (a random key for merchant shop_1 unless CONTAINER_KEYS
#                                names one), the time to ready and each container's idle memory
#   scripts/container.sh down    stops them (SIGTERM: payments in flight finish first)
#   scripts/container.sh start a|b   replaces one service container by a new one and waits until it is ready
#   scripts/container.sh test    build if there is no image, up, the tests of the deployment
#                                (src/test/java/io/payonce/container/ContainerIT.java), down
#
# The deployment: containers payonce-a and payonce-b on the host network, business ports 18081 and
# 18082 over mTLS, management ports 19081 and 19082, the database payonce_containers on the shared
# MariaDB, Redis database 5, the sandbox of payonce-a as both containers' channel (turned on as a
# provider's test mode, so the ledger can be read), the certificates of scripts/dev-ca.sh; the gateway
# (scripts/gateway.sh, nginx on the host) on 127.0.0.1:18000 with the keys file CONTAINER_KEYS. Each
# container runs the prod profile, configured by environment only, read-only, as user 1001, with a tmpfs
# /tmp, the heap given explicitly (the executable built here does not read cgroup limits) and a stop
# timeout above the service's shutdown bound (1 s delay + 10 s).
#
# CONTAINER_OPTIONS: further options for each service container's podman run, split on spaces (such as
# "-e QUARKUS_HTTP_ACCESS_LOG_ENABLED=true").
#
# Exits 3 after printing "container: skipped: <why>" where podman, runc or nginx cannot be installed or
# the native toolchain cannot be assembled: nothing was verified then, which never counts as a pass.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=localhost/payonce:native
BASE=localhost/payonce-base:bookworm
LIMITS=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
# runc named, since podman's other runtime (crun), where installed, is refused here as its default limits are
PODMAN=(podman --runtime runc)
DB=${CONTAINER_DB:-payonce_containers}
CERTS=$PWD/target/dev-ca
MOUNTED=$PWD/target/container-certs
GATEWAY_DIR=target/container-gateway
# the containers' logs, kept when one is replaced or taken down
LOGS=target/container-logs
GATEWAY_PORT=${CONTAINER_GATEWAY_PORT:-18000}
HEAP=${CONTAINER_HEAP:--Xmx192m}
MERCHANT=${CONTAINER_MERCHANT:-shop_1}
KEYS=${CONTAINER_KEYS:-$PWD/$GATEWAY_DIR/api-keys}
NAMES=(payonce-a payonce-b)
PORTS=(18081 18082)
MANAGEMENT=(19081 19082)

skip() { echo "container: skipped: $*" >&2; exit 3; }

# podman with runc, and nginx for the gateway, from Debian's packages where missing (as scripts/services.sh
# installs the servers); a machine where they cannot be installed verifies nothing
source scripts/services.sh
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
[[ -x /usr/sbin/nginx ]] || missing+=(nginx)
if ((${#missing[@]} > 0)); then
  _apt_install "${missing[@]}" || skip "${missing[*]} could not be installed (apt-get install ${missing[*]})"
fi

build() {
  if ! compgen -G 'target/*-runner' >/dev/null; then
    local status=0
    scripts/native.sh -DskipITs || status=$?
    ((status != 3)) || skip "no native executable: the native toolchain could not be assembled (native.sh said why)"
    ((status == 0)) || { echo "container: the native build failed ($status)" >&2; exit "$status"; }
  fi
  scripts/container-base.sh "$BASE"
  "${PODMAN[@]}" build -q "${LIMITS[@]}" --build-arg BASE="$BASE" -f src/main/docker/Dockerfile.native-micro -t "$IMAGE" .
  echo "container: built $IMAGE, $(podman image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=iec) (base $(podman image inspect --format '{{.Size}}' "$BASE" | numfmt --to=iec))"
}

# $1 name: keeps the container's log (it goes with the container) in LOGS, numbered in order
keep_log() {
  podman container exists "$1" || return 0
  mkdir -p "$LOGS"
  local n
  n=$(find "$LOGS" -name "$1.*.log" | wc -l)
  podman logs "$1" >"$LOGS/$1.$((n + 1)).log" 2>&1 || true
}

# $1 index: starts one service container
run_one() {
  local i=$1
  keep_log "${NAMES[$i]}"
  "${PODMAN[@]}" run -d --replace --name "${NAMES[$i]}" --network host "${LIMITS[@]}" \
    --read-only --tmpfs /tmp:rw,size=64m,mode=1777 --user 1001 --stop-timeout 15 \
    -v "$MOUNTED:/certs:ro" \
    -e QUARKUS_HTTP_PORT="${PORTS[$i]}" -e QUARKUS_MANAGEMENT_PORT="${MANAGEMENT[$i]}" \
    -e QUARKUS_HTTP_HOST=127.0.0.1 -e QUARKUS_MANAGEMENT_HOST=127.0.0.1 \
    -e QUARKUS_DATASOURCE_REACTIVE_URL="mysql://127.0.0.1:3306/$DB" \
    -e QUARKUS_DATASOURCE_JDBC_URL="jdbc:mariadb://127.0.0.1:3306/$DB" \
    -e QUARKUS_REDIS_HOSTS=redis://127.0.0.1:6379/5 \
    -e PAYONCE_SANDBOX_ENABLED=true \
    -e PAYONCE_CHANNEL_URL="https://localhost:${PORTS[0]}/sandbox" \
    -e PAYONCE_GATEWAY_CLIENT_AUTH=mtls \
    -e PAYONCE_GATEWAY_TLS_CERTIFICATE=/certs/service.crt -e PAYONCE_GATEWAY_TLS_KEY=/certs/service.key \
    -e PAYONCE_GATEWAY_TLS_CA=/certs/ca.crt \
    ${CONTAINER_OPTIONS:-} "$IMAGE" "$HEAP" >/dev/null
}

# $1 index: waits until the container's readiness answers 200 on its management port
await_ready() {
  local i=$1
  for _ in $(seq 1 600); do # 60 s at most
    if curl -sf -o /dev/null "http://127.0.0.1:${MANAGEMENT[$i]}/q/health/ready"; then return 0; fi
    [[ $(podman inspect --format '{{.State.Running}}' "${NAMES[$i]}" 2>/dev/null) == true ]] || break
    sleep 0.1
  done
  echo "container: ${NAMES[$i]} did not become ready; its log:" >&2
  podman logs --tail 30 "${NAMES[$i]}" >&2 || true
  return 1
}

up() {
  podman image exists "$IMAGE" || { echo "container: no image $IMAGE: scripts/container.sh build first" >&2; exit 1; }
  ensure_services >/dev/null
  scripts/dev-ca.sh "$CERTS" >/dev/null
  # what the containers mount: the instance's certificate and key owned by their user 1001, the key
  # readable by it alone
  rm -rf "$MOUNTED" && mkdir -p "$MOUNTED"
  cp "$CERTS/ca.crt" "$CERTS/service.crt" "$CERTS/service.key" "$MOUNTED/"
  chown -R 1001:0 "$MOUNTED" && chmod 0400 "$MOUNTED/service.key"
  mariadb -h127.0.0.1 -uroot -e "CREATE DATABASE IF NOT EXISTS $DB"
  local started
  started=$(date +%s%N)
  run_one 0 # first alone: it migrates the schema
  await_ready 0
  echo "container: ${NAMES[0]} ready in $((($(date +%s%N) - started) / 1000000)) ms"
  run_one 1
  await_ready 1
  sleep 2 # settle before reading idle memory
  local name pid
  for name in "${NAMES[@]}"; do
    # the process's resident set (the executable's mapped pages included), and what its cgroup is charged
    pid=$(podman inspect --format '{{.State.Pid}}' "$name")
    echo "container: $name idle: RSS $(awk '/^VmRSS/ { printf "%d MiB", $2 / 1024 }' "/proc/$pid/status")," \
      "cgroup memory $(podman stats --no-stream --format '{{.MemUsage}}' "$name" | cut -d/ -f1)"
  done
  mkdir -p "$GATEWAY_DIR"
  if [[ -z ${CONTAINER_KEYS:-} ]]; then
    # one random key (256 bits, as api-keys.example asks) for the walk-through's merchant
    (umask 077 && echo "\"$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')\" $MERCHANT;" >"$KEYS")
  fi
  scripts/gateway.sh start --dir "$GATEWAY_DIR" --listen "127.0.0.1:$GATEWAY_PORT" \
    --upstream "127.0.0.1:${PORTS[0]}" --upstream "127.0.0.1:${PORTS[1]}" \
    --client-auth mtls --certs "$CERTS" --keys "$KEYS" >/dev/null
  echo "container: gateway at http://127.0.0.1:$GATEWAY_PORT (API keys: $KEYS)"
}

# $1 a or b: a new container in place of that one
start() {
  local i
  case ${1:-} in a) i=0 ;; b) i=1 ;; *) echo "usage: scripts/container.sh start a|b" >&2; exit 2 ;; esac
  run_one "$i"
  await_ready "$i"
}

# The tests of the deployment, against what `up` starts; down afterwards, whatever they gave.
test_deployment() {
  podman image exists "$IMAGE" || build
  up
  trap down EXIT
  local key
  key=$(sed -n "s/^\"\([0-9a-f]*\)\" $MERCHANT;\$/\1/p" "$KEYS" | head -n 1)
  [[ -n $key ]] || { echo "container: no key for $MERCHANT in $KEYS" >&2; exit 1; }
  source scripts/java25.sh
  ./mvnw -B verify -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false -Dit.test=ContainerIT \
    -Dpayonce.container.gateway="$GATEWAY_PORT" -Dpayonce.container.merchant="$MERCHANT" \
    -Dpayonce.container.key="$key" -Dpayonce.container.ports="${PORTS[0]},${PORTS[1]}" \
    -Dpayonce.container.names="${NAMES[0]},${NAMES[1]}"
}

down() {
  scripts/gateway.sh stop --dir "$GATEWAY_DIR" >/dev/null 2>&1 || true
  for name in "${NAMES[@]}"; do
    podman stop -t 15 "$name" >/dev/null 2>&1 || true
    keep_log "$name"
    podman rm -f "$name" >/dev/null 2>&1 || true
  done
  echo "container: down (logs in $LOGS)"
}

case ${1:-} in
  build) build ;;
  up) up ;;
  down) down ;;
  start) start "${2:-}" ;;
  test) test_deployment ;;
  *) echo "usage: scripts/container.sh build|up|down|start a|b|test" >&2; exit 2 ;;
esac
