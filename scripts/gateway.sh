#!/usr/bin/env bash
# The gateway clients come through: nginx running src/main/docker/nginx/payonce.conf, rendered for the
# instances scripts/run.sh starts (docs/gateway.md).
#
#   scripts/gateway.sh [start] [OPTIONS]   render the configuration, check it, start nginx (as a daemon)
#   scripts/gateway.sh render [OPTIONS]    only render it into DIR/nginx.conf (what the tests run)
#   scripts/gateway.sh stop [--dir DIR]    stop the nginx started in DIR
#
# OPTIONS (each also settable by the environment variable in brackets):
#   --listen ADDR        where clients connect, [host:]port                          [GATEWAY_LISTEN] 8000
#   --upstream HOST:PORT an instance's business port; give it again for a second     [GATEWAY_UPSTREAMS,
#                        instance                                       space-separated] 127.0.0.1:8080
#   --keys FILE          the API key file (format in api-keys.example)              [GATEWAY_KEYS]
#                                                      src/main/docker/nginx/api-keys.example (lets no one in)
#   --client-auth MODE   the instances' payonce.gateway.client-auth: mtls (speak TLS to them, presenting
#                        the gateway's certificate) or none (plain HTTP)      [PAYONCE_GATEWAY_CLIENT_AUTH] none
#   --certs DIR          with mtls: ca.crt, gateway.crt and gateway.key          [GATEWAY_CERTS] target/dev-ca
#                        (made by scripts/dev-ca.sh when the default directory has none)
#   --tls-name NAME      with mtls: the name the instances' certificates carry  [GATEWAY_TLS_NAME] localhost
#   --dir DIR            the rendered configuration, logs, pid and temporary files [GATEWAY_DIR] target/gateway
#
# The read timeout follows the instances' own bounds, read from the variables that configure them:
# PAYONCE_IDEMPOTENCY_WAIT_TIMEOUT (10s), PAYONCE_CHANNEL_TIMEOUT (5s), PAYONCE_DATABASE_TIMEOUT (2s): it is
# the larger of a duplicate's bound (wait timeout + 1 s) and an owner's (channel timeout + 5 database
# timeouts), plus 5 s for the answer's way back (with the defaults: 20 s).
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPLATE=src/main/docker/nginx/payonce.conf
NGINX=/usr/sbin/nginx
# an owner's longest path to its answer, in database timeouts (payment/PaymentExecutor.DATABASE_TIMES_TO_ANSWER)
DATABASE_TIMES_TO_ANSWER=5
# a duplicate answers within its wait bound plus this (contract section 6)
DUPLICATE_EXTRA_MS=1000
# the answer's way from the instance to the gateway, on a loaded machine
MARGIN_MS=5000

die() { echo "gateway.sh: $*" >&2; exit 1; }

# A duration as the instances read it (SmallRye: 10s, 500ms, 2m, or bare seconds), in milliseconds.
millis() {
  local value=$1 name=$2
  case $value in
    *ms) value=${value%ms}; [[ $value =~ ^[0-9]+$ ]] && { echo "$value"; return; } ;;
    *s) value=${value%s}; [[ $value =~ ^[0-9]+$ ]] && { echo $((value * 1000)); return; } ;;
    *m) value=${value%m}; [[ $value =~ ^[0-9]+$ ]] && { echo $((value * 60000)); return; } ;;
    *) [[ $value =~ ^[0-9]+$ ]] && { echo $((value * 1000)); return; } ;;
  esac
  die "$name=$2: give a duration as 10s, 500ms or 2m"
}

read_timeout_ms() {
  local wait channel database duplicate owner
  wait=$(millis "${PAYONCE_IDEMPOTENCY_WAIT_TIMEOUT:-10s}" PAYONCE_IDEMPOTENCY_WAIT_TIMEOUT)
  channel=$(millis "${PAYONCE_CHANNEL_TIMEOUT:-5s}" PAYONCE_CHANNEL_TIMEOUT)
  database=$(millis "${PAYONCE_DATABASE_TIMEOUT:-2s}" PAYONCE_DATABASE_TIMEOUT)
  duplicate=$((wait + DUPLICATE_EXTRA_MS))
  owner=$((channel + DATABASE_TIMES_TO_ANSWER * database))
  echo $(((duplicate > owner ? duplicate : owner) + MARGIN_MS))
}

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

command=start
case ${1:-} in
  start | render | stop) command=$1; shift ;;
  -h | --help) usage; exit 0 ;;
esac

listen=${GATEWAY_LISTEN:-8000}
read -r -a upstreams <<<"${GATEWAY_UPSTREAMS:-}"
keys=${GATEWAY_KEYS:-src/main/docker/nginx/api-keys.example}
client_auth=${PAYONCE_GATEWAY_CLIENT_AUTH:-none}
certs=${GATEWAY_CERTS:-}
tls_name=${GATEWAY_TLS_NAME:-localhost}
dir=${GATEWAY_DIR:-target/gateway}
given_upstreams=()
while (($#)); do
  (($# >= 2)) || [[ $1 == -h || $1 == --help ]] || die "$1 needs a value (see --help)"
  case $1 in
    --listen) listen=$2 ;;
    --upstream) given_upstreams+=("$2") ;;
    --keys) keys=$2 ;;
    --client-auth) client_auth=$2 ;;
    --certs) certs=$2 ;;
    --tls-name) tls_name=$2 ;;
    --dir) dir=$2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift 2
done
((${#given_upstreams[@]})) && upstreams=("${given_upstreams[@]}")
((${#upstreams[@]})) || upstreams=(127.0.0.1:8080)
dir=$(realpath -m "$dir")

stop() {
  local pid
  [[ -s $dir/nginx.pid ]] || { echo "gateway.sh: no gateway running from $dir" >&2; return 0; }
  pid=$(<"$dir/nginx.pid")
  if kill -QUIT "$pid" 2>/dev/null; then
    # QUIT lets requests in flight finish: within the read timeout
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -TERM "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/nginx.pid"
  echo "gateway.sh: stopped the gateway of $dir" >&2
}

render() {
  local conf line servers="" upstream scheme=http out=() left
  [[ -r $keys ]] || die "no key file $keys"
  case $client_auth in
    mtls)
      scheme=https
      if [[ -z $certs ]]; then
        certs=target/dev-ca
        scripts/dev-ca.sh "$certs"
      fi
      for f in ca.crt gateway.crt gateway.key; do
        [[ -r $certs/$f ]] || die "no $certs/$f (scripts/dev-ca.sh makes a development set)"
      done
      certs=$(realpath "$certs")
      ;;
    none) ;;
    *) die "--client-auth is mtls or none, not $client_auth" ;;
  esac
  for upstream in "${upstreams[@]}"; do
    [[ $upstream =~ ^[^[:space:]\;]+:[0-9]+$ ]] || die "--upstream $upstream: give host:port"
    servers+="        server $upstream max_fails=0;"$'\n'
  done
  [[ $listen =~ ^[^[:space:]\;]+$ ]] || die "--listen $listen: give [host:]port"
  mkdir -p "$dir"
  conf=$(<"$TEMPLATE")
  conf=${conf//@DIR@/"$dir"}
  conf=${conf//@API_KEYS@/"$(realpath "$keys")"}
  conf=${conf//@LISTEN@/"$listen"}
  conf=${conf//@UPSTREAM_SERVERS@/"${servers%$'\n'}"}
  conf=${conf//@UPSTREAM_SCHEME@/"$scheme"}
  conf=${conf//@READ_TIMEOUT@/"$(read_timeout_ms)ms"}
  conf=${conf//@TLS_NAME@/"$tls_name"}
  conf=${conf//@TLS_CA@/"$certs/ca.crt"}
  conf=${conf//@TLS_CERT@/"$certs/gateway.crt"}
  conf=${conf//@TLS_KEY@/"$certs/gateway.key"}
  while IFS= read -r line; do
    [[ $client_auth == none && $line == *'# mtls' ]] && continue
    out+=("$line")
  done <<<"$conf"
  left=$(printf '%s\n' "${out[@]}" | grep -v '^ *#' | grep -o '@[A-Z_]*@' | head -1 || true)
  [[ -z $left ]] || die "$TEMPLATE has a placeholder this script does not fill: $left"
  printf '%s\n' "${out[@]}" >"$dir/nginx.conf"
  echo "$dir/nginx.conf"
}

install_nginx() {
  [[ -x $NGINX ]] && return
  local sudo=
  [[ $EUID -ne 0 ]] && command -v sudo >/dev/null && sudo=sudo
  echo "gateway.sh: installing nginx" >&2
  $sudo apt-get update >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y nginx >&2
}

port_open() { timeout 1 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null; }

start() {
  local conf host port
  install_nginx
  [[ -s $dir/nginx.pid ]] && kill -0 "$(<"$dir/nginx.pid")" 2>/dev/null &&
    die "a gateway runs from $dir already (scripts/gateway.sh stop --dir $dir)"
  conf=$(render)
  "$NGINX" -q -t -p "$dir" -c "$conf" || die "nginx refused $conf (its log: $dir/error.log)"
  "$NGINX" -p "$dir" -c "$conf"
  port=${listen##*:}
  host=${listen%:"$port"}
  [[ $host == "$listen" || $host == '*' || $host == 0.0.0.0 || $host == '[::]' ]] && host=127.0.0.1
  for _ in $(seq 1 100); do port_open "$host" "$port" && break; sleep 0.1; done
  port_open "$host" "$port" || die "nginx does not listen on $listen (its log: $dir/error.log)"
  echo "gateway.sh: listening on $listen for ${upstreams[*]} ($client_auth); logs in $dir" >&2
}

case $command in
  start) start ;;
  render) render ;;
  stop) stop ;;
esac
