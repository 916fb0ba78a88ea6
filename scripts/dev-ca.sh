#!/usr/bin/env bash
# Makes a development certificate authority and the two certificates that payonce.gateway.client-auth=mtls
# needs, for local runs and tests only (docs/gateway.md says how an operator provides real ones):
#
#   scripts/dev-ca.sh [DIR]      default DIR: target/dev-ca
#
#   ca.crt                  the CA: the instances trust the gateway's certificate by it, the gateway and
#                           the instances' channel client trust the instances' certificate by it
#   service.crt, .key       an instance's: served on its business port and presented by its channel client
#                           to its sandbox; names 127.0.0.1 and localhost
#   gateway.crt, .key       the gateway's client certificate, presented to the instances
#
# Idempotent: certificates that are there, issued by the CA there and valid for at least another day are
# kept; anything else is made again (a new CA makes both certificates again). Keys are P-256, in PKCS#8,
# readable by their owner only; the CA's key stays in DIR too, as this CA signs nothing outside it.
set -euo pipefail

DIR=${1:-target/dev-ca}
DAYS=${DEV_CA_DAYS:-825}
mkdir -p "$DIR"
cd "$DIR"
umask 077

# valid for another day and, for a leaf, issued by this CA
fresh() {
  [[ -s $1.crt && -s $1.key ]] || return 1
  openssl x509 -in "$1.crt" -noout -checkend 86400 >/dev/null 2>&1 || return 1
  [[ $1 == ca ]] || openssl verify -CAfile ca.crt "$1.crt" >/dev/null 2>&1
}

new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }

# $1 name, $2 subject CN, $3 extensions (x509v3 config lines)
issue() {
  new_key "$1"
  printf '%s\n' "$3" >"$1.ext"
  openssl req -new -key "$1.key" -subj "/O=PayOnce development/CN=$2" -out "$1.csr" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$DAYS" -sha256 \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
  echo "dev-ca.sh: issued $DIR/$1.crt ($2)" >&2
}

if ! fresh ca; then
  new_key ca
  openssl req -x509 -new -key ca.key -sha256 -days "$DAYS" -subj "/O=PayOnce development/CN=PayOnce development CA" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out ca.crt 2>/dev/null
  rm -f service.crt gateway.crt ca.srl
  echo "dev-ca.sh: made the CA $DIR/ca.crt" >&2
fi

# the instance's certificate serves TLS and is also its client certificate towards its sandbox
fresh service || issue service "payonce service" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"

fresh gateway || issue gateway "payonce gateway" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"

chmod 644 ca.crt service.crt gateway.crt
echo "dev-ca.sh: $DIR has ca.crt, service.crt/.key, gateway.crt/.key" >&2
