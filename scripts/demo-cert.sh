#!/usr/bin/env bash
# A certificate for a webhook receiver of your own on this machine, from the demo's certificate
# authority, which the dispatcher of `bash scripts/start.sh` trusts: serve your receiver over https
# with it and register https://localhost:<port>/<path> as a webhook (docs/settings.md, "Your own
# receiver in the demo"). start.sh makes its own receiver's certificate with it too.
#
#   bash scripts/demo-cert.sh [<dir>]     writes <dir>/key.pem and <dir>/cert.pem (default .demo/my-receiver)
#
# The CA is made once, in .demo/ (git-ignored; its key readable by you alone), and kept, so a
# certificate stays trusted across restarts of start.sh. Its name constraints limit it to
# localhost, 127.0.0.0/8 and ::1: should its key leak, it vouches for no other site. Why a bash
# script and not tripctl: it needs only openssl, not Node 24 or the database, and tripctl is the
# platform team's admin CLI, which never runs in a checkout's demo alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ca_dir="$root/.demo"
out="${1:-$ca_dir/my-receiver}"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)

command -v openssl >/dev/null 2>&1 || {
  echo "demo-cert: openssl is missing; install it (Debian: apt-get install openssl)" >&2
  exit 1
}

# Keys are written readable by their owner alone.
umask 077
mkdir -p "$ca_dir" "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A usable CA: its certificate, valid for at least another day, and the key that goes with it.
usable_ca() {
  openssl x509 -in "$ca_dir/ca.pem" -noout -checkend 86400 >/dev/null 2>&1 &&
    [ "$(openssl x509 -in "$ca_dir/ca.pem" -noout -pubkey 2>/dev/null)" = \
      "$(openssl pkey -in "$ca_dir/ca-key.pem" -pubout 2>/dev/null)" ]
}

if ! usable_ca; then
  [ -e "$ca_dir/ca.pem" ] && echo "demo-cert: made a new demo CA: certificates from the old one are no longer trusted, so issue yours again" >&2
  openssl req -x509 "${ec[@]}" -keyout "$work/ca-key.pem" -out "$work/ca.pem" -days 3650 \
    -subj "/CN=Trips demo CA (this checkout only)" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign" \
    -addext "nameConstraints=critical,permitted;DNS:localhost,permitted;IP:127.0.0.0/255.0.0.0,permitted;IP:0:0:0:0:0:0:0:1/FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF" \
    2>/dev/null
  chmod 644 "$work/ca.pem"
  # The key first: a CA certificate is never there without its key.
  mv "$work/ca-key.pem" "$ca_dir/ca-key.pem"
  mv "$work/ca.pem" "$ca_dir/ca.pem"
fi

openssl req "${ec[@]}" -keyout "$work/key.pem" -out "$work/req.csr" -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n' >"$work/ext.cnf"
openssl x509 -req -in "$work/req.csr" -CA "$ca_dir/ca.pem" -CAkey "$ca_dir/ca-key.pem" \
  -set_serial "0x$(openssl rand -hex 16)" -days 365 -extfile "$work/ext.cnf" -out "$work/cert.pem" 2>/dev/null
chmod 644 "$work/cert.pem"
mv "$work/key.pem" "$out/key.pem"
mv "$work/cert.pem" "$out/cert.pem"

cat <<INFO
A certificate for localhost, 127.0.0.1 and ::1, valid for a year, from the demo CA ($ca_dir/ca.pem)
that the dispatcher of bash scripts/start.sh trusts:
  key:  $out/key.pem
  cert: $out/cert.pem
Serve your receiver over https with them (Node: https.createServer({ key, cert }, handler)), add
https://localhost:<its port>/<its path> as a webhook on the settings page, and verify each delivery
with the secret shown once there (docs/webhooks.md).
INFO
