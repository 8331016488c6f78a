#!/usr/bin/env bash
# Makes the test certificates of tests/planes/http/tls (checked in; rerun only to
# replace them): a test CA, a server certificate for IP 127.0.0.1 and DNS
# localhost signed by it, a client certificate signed by it (mutual TLS), and
# an unrelated CA (a client trusting only it must refuse the server). The server
# certificate is also a client certificate (an admin API presents it on a forward).
# Valid for 100 years; the CA keys are thrown away. Needs openssl.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
days=36500
openssl req -x509 "${ec[@]}" -keyout "$tmp/ca.key" -out ca.crt -days $days \
  -subj "/CN=dynamo http test CA"
openssl req -x509 "${ec[@]}" -keyout "$tmp/other-ca.key" -out other-ca.crt -days $days \
  -subj "/CN=dynamo unrelated test CA"
leaf() { # name CN extensions
  openssl req "${ec[@]}" -keyout "$1.key" -out "$tmp/$1.csr" -subj "/CN=$2"
  printf '%s\n' "$3" >"$tmp/$1.ext"
  openssl x509 -req -in "$tmp/$1.csr" -CA ca.crt -CAkey "$tmp/ca.key" -CAcreateserial \
    -CAserial "$tmp/ca.srl" -out "$1.crt" -days $days -extfile "$tmp/$1.ext"
}
leaf server 127.0.0.1 $'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth'
leaf client "dynamo test client" 'extendedKeyUsage=clientAuth'
chmod 644 ./*.key
