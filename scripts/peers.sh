# shellcheck shell=bash
# The measuring peers of ../shared/peers (seed-go, loadgen, channel-stub), for the scripts that measure
# PayOnce beside them (first-minute.sh, profile.sh): where their binaries are, and loadgen's configuration
# for PayOnce. Sourced from the repository's root.

# PEERS_BIN: the peers' binaries, which ../shared/peers/build.sh puts in ~/.cache/payonce-peers/bin
PEERS_BIN=${PEERS_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/payonce-peers/bin}

# The peers named, built into PEERS_BIN's folder by ../shared/peers/build.sh when one is missing; exits
# when they cannot be.
peers_require() {
  local bin missing=
  for bin in "$@"; do [[ -x $PEERS_BIN/$bin ]] || missing=$bin; done
  [[ -n $missing ]] || return 0
  [[ -x ../shared/peers/build.sh ]] || { echo "$(basename "$0"): no $missing in $PEERS_BIN and no ../shared/peers/build.sh" >&2; exit 1; }
  ../shared/peers/build.sh "$(dirname "$PEERS_BIN")" >&2
}

# loadgen's quarkus preset for PayOnce at $1 (base URL), its database $2, merchant $3: the orders made by
# SQL (so that nothing but the timed requests reaches the service, and a JVM stays cold until then), and
# no check of the records afterwards (the callers count what they need themselves).
peers_loadgen_config() {
  cat <<JSON
{
  "base_url": "$1",
  "headers": {"X-Merchant-Id": "$3"},
  "orders": {"via": "sql",
    "insert_prefix": "INSERT INTO orders (merchant_id, order_no, amount, currency, status, version, created_at, updated_at) VALUES ",
    "insert_row": "('$3', '{order_no}', {amount}, '{currency}', 'PENDING', 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))"},
  "records": {"via": ""},
  "dsn": "root@tcp(127.0.0.1:3306)/$2"
}
JSON
}
