#!/usr/bin/env bash
# Makes sure MariaDB and Redis answer on loopback, as the tests and application.properties expect.
#
#   scripts/services.sh            ensure both (install/start what is missing), one line per service
#   scripts/services.sh --check    only report; exit 1 if one is not reachable
#   source scripts/services.sh     defines ensure_services / ensure_mariadb / ensure_redis
#                                  (sourcing also turns on strict mode: meant for scripts)
#
# A server that already answers is used as is: this script never stops, restarts or reconfigures
# a server it did not start. Starting one needs root (or sudo); on a fresh Debian 12 it installs
# the packages and starts the daemons without systemd, so it also works in containers and CI.
# On failure it exits non-zero with a message (also when sourced), so callers cannot carry on.
set -euo pipefail

DB_HOST=${DB_HOST:-127.0.0.1}
DB_PORT=${DB_PORT:-3306}
DB_USER=${DB_USER:-root}
DB_NAME=${DB_NAME:-test}
REDIS_HOST=${REDIS_HOST:-127.0.0.1}
REDIS_PORT=${REDIS_PORT:-6379}
RABBITMQ_HOST=${RABBITMQ_HOST:-127.0.0.1}
RABBITMQ_PORT=${RABBITMQ_PORT:-5672}
WAIT_SECONDS=${WAIT_SECONDS:-60}

SUDO=
if [[ $EUID -ne 0 ]] && command -v sudo >/dev/null; then SUDO=sudo; fi
_apt_updated=no

_log() { echo "services.sh: $*" >&2; }
_die() { _log "$*"; exit 1; }

# bash's /dev/tcp needs no client; timeout keeps an unroutable host from hanging us.
# shellcheck disable=SC2016  # $0/$1 expand in the inner bash, on purpose
port_open() { timeout 1 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null; }

_is_loopback() { [[ $1 == localhost || $1 == 127.* || $1 == ::1 ]]; }

# Retries "$@" once a second for WAIT_SECONDS, so a stuck start fails instead of hanging CI.
_wait_for() {
  local i
  for ((i = 0; i < WAIT_SECONDS; i++)); do "$@" && return 0; sleep 1; done
  return 1
}

_apt_update() {
  if [[ $_apt_updated == no ]]; then $SUDO apt-get update >&2; _apt_updated=yes; fi
}

_apt_install() {
  _log "installing $*"
  _apt_update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >&2
}

# promtool alone, out of Debian's prometheus package: installing the package would also start a
# Prometheus server on port 9090 wherever no policy-rc.d forbids it.
_install_promtool() {
  local dir
  _log "installing promtool from the prometheus package"
  _apt_update
  dir=$(mktemp -d)
  (cd "$dir" && apt-get download prometheus >&2)
  dpkg-deb --fsys-tarfile "$dir"/prometheus_*.deb | $SUDO tar -x -C /usr/local/bin --strip-components=3 ./usr/bin/promtool
  rm -rf "$dir"
}

# /usr/sbin is not on a normal user's PATH, so look there too.
_find_bin() {
  local b
  for b in "$@"; do
    command -v "$b" 2>/dev/null && return 0
    [[ -x /usr/sbin/$b ]] && { echo "/usr/sbin/$b"; return 0; }
  done
  return 1
}

_db_tcp() { "$(_find_bin mariadb mysql)" -h"$DB_HOST" -P"$DB_PORT" -u"$DB_USER" "$@"; }

_start_mariadb() {
  local daemon log=/tmp/payonce-mariadbd.log
  daemon=$(_find_bin mariadbd mysqld) || {
    _apt_install mariadb-server mariadb-client
    daemon=$(_find_bin mariadbd mysqld)
  }
  # The package's postinst may already have started it (where no policy-rc.d forbids that).
  port_open "$DB_HOST" "$DB_PORT" && return 0
  $SUDO install -d -o mysql -g mysql /run/mysqld
  if ! $SUDO test -d /var/lib/mysql/mysql; then
    $SUDO mariadb-install-db --user=mysql --datadir=/var/lib/mysql >&2
  fi
  # No systemd in containers: start-stop-daemon detaches it; --output keeps its errors readable.
  $SUDO start-stop-daemon --start --oknodo --background --output "$log" --exec "$daemon" -- \
    --user=mysql --bind-address=127.0.0.1 --port="$DB_PORT"
  _wait_for port_open "$DB_HOST" "$DB_PORT" ||
    { tail -n 20 "$log" >&2 || true; _die "MariaDB did not answer on port $DB_PORT within ${WAIT_SECONDS}s (log: $log)"; }
}

_db_socket() { $SUDO "$(_find_bin mariadb mysql)" -uroot "$@"; }

# A fresh Debian root@localhost has an 'invalid' password OR unix_socket, so an empty-password
# TCP login fails. Fixed through the socket, only after the TCP login actually failed, and only
# while root has no real password (a password somebody set is never replaced).
_fix_root_login() {
  local err=$1 sql fresh=0
  if [[ $DB_USER == root ]] && _is_loopback "$DB_HOST"; then
    fresh=$(_db_socket -N -e "SELECT COUNT(*) FROM mysql.user WHERE user='root' AND host='localhost'
      AND (plugin='unix_socket' OR authentication_string IN ('invalid', ''))" 2>/dev/null) || fresh=0
  fi
  [[ $fresh == 1 ]] || _die "cannot log in as $DB_USER over TCP, and root has a password here: $err"
  _log "allowing root to log in over TCP with an empty password"
  sql="ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket;"
  # With skip-name-resolve the server sees a TCP client as 127.0.0.1, which 'localhost' does not match.
  if [[ $(_db_socket -N -e 'SELECT @@skip_name_resolve') == 1 ]]; then
    sql+=" CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;"
  fi
  _db_socket -e "$sql" || _die "could not fix root's login"
}

ensure_mariadb() {
  local state="already running" err
  if ! port_open "$DB_HOST" "$DB_PORT"; then
    if _is_loopback "$DB_HOST"; then
      _start_mariadb
      state=started
    else # a remote server (e.g. a CI service container) may still be booting: wait, never start one
      _wait_for port_open "$DB_HOST" "$DB_PORT" || _die "MariaDB not reachable at $DB_HOST:$DB_PORT"
    fi
  fi
  _find_bin mariadb mysql >/dev/null || _apt_install mariadb-client
  local create="CREATE DATABASE IF NOT EXISTS \`$DB_NAME\`"
  if ! err=$(_db_tcp -e "$create" 2>&1); then
    _fix_root_login "$err"
    _db_tcp -e "$create" || _die "still cannot log in as $DB_USER over TCP"
  fi
  echo "MariaDB: $state on $DB_HOST:$DB_PORT (database '$DB_NAME' ready)"
}

_redis_pong() {
  if command -v redis-cli >/dev/null; then
    [[ $(redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]
  else
    port_open "$REDIS_HOST" "$REDIS_PORT"
  fi
}

ensure_redis() {
  local state="already running"
  if ! port_open "$REDIS_HOST" "$REDIS_PORT"; then
    if _is_loopback "$REDIS_HOST"; then
      _find_bin redis-server >/dev/null || _apt_install redis-server
      # Again, the package may have started its own instance on the default port.
      if ! port_open "$REDIS_HOST" "$REDIS_PORT"; then
        # Throwaway cache for tests: no persistence, nothing written to disk.
        $SUDO "$(_find_bin redis-server)" --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" \
          --save "" --appendonly no >&2
      fi
      state=started
    fi
    _wait_for _redis_pong || _die "Redis did not answer PONG on $REDIS_HOST:$REDIS_PORT within ${WAIT_SECONDS}s"
  fi
  echo "Redis: $state on $REDIS_HOST:$REDIS_PORT"
}

# The queue entrance's tests use the local broker (a vhost of their own each, made and removed with
# rabbitmqctl, so they need root or sudo) and start private nodes of their own from the same package.
ensure_rabbitmq() {
  local state="already running"
  if ! port_open "$RABBITMQ_HOST" "$RABBITMQ_PORT"; then
    if _is_loopback "$RABBITMQ_HOST"; then
      [[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]] || _apt_install rabbitmq-server
      # the package may have started its own node
      if ! port_open "$RABBITMQ_HOST" "$RABBITMQ_PORT"; then
        $SUDO rabbitmq-server -detached >&2
      fi
      state=started
    fi
    _wait_for port_open "$RABBITMQ_HOST" "$RABBITMQ_PORT" ||
      _die "RabbitMQ did not answer on $RABBITMQ_HOST:$RABBITMQ_PORT within ${WAIT_SECONDS}s"
  fi
  $SUDO rabbitmqctl await_startup >/dev/null 2>&1 || _die "rabbitmqctl cannot reach the broker (it needs root)"
  echo "RabbitMQ: $state on $RABBITMQ_HOST:$RABBITMQ_PORT"
}

check_services() {
  local rc=0
  if port_open "$DB_HOST" "$DB_PORT"; then echo "MariaDB: reachable on $DB_HOST:$DB_PORT"
  else echo "MariaDB: NOT reachable on $DB_HOST:$DB_PORT"; rc=1; fi
  if port_open "$REDIS_HOST" "$REDIS_PORT"; then echo "Redis: reachable on $REDIS_HOST:$REDIS_PORT"
  else echo "Redis: NOT reachable on $REDIS_HOST:$REDIS_PORT"; rc=1; fi
  return "$rc"
}

ensure_services() { ensure_mariadb; ensure_redis; }

# Binaries the fault, gateway and cluster tests start themselves on free ports: a throwaway
# redis-server (also six of them as a Redis Cluster, with redis-cli to form it), nginx (the
# deployment example), Galera (galera-4 beside mariadbd, and rsync for its state transfer); and
# libfaketime, which a clock-skew test preloads into an instance to set its clock apart.
# Installed, never started here.
FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
ensure_test_tools() {
  _find_bin redis-server >/dev/null || _apt_install redis-server
  [[ -x /usr/sbin/nginx ]] || _apt_install nginx
  [[ -f $FAKETIME_LIB ]] || _apt_install faketime
  [[ -f /usr/lib/galera/libgalera_smm.so ]] || _apt_install galera-4
  command -v rsync >/dev/null || _apt_install rsync
  command -v redis-cli >/dev/null || _apt_install redis-tools
  command -v promtool >/dev/null || _install_promtool
  echo "Test tools: redis-server, redis-cli, nginx, libfaketime, galera-4, rsync and promtool present"
}

# Run only when executed, not when sourced.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  case ${1:-} in
    "") ensure_services ;;
    --check) check_services ;;
    --test-tools) ensure_services; ensure_rabbitmq; ensure_test_tools ;;
    *) echo "usage: $0 [--check|--test-tools]" >&2; exit 2 ;;
  esac
fi
