#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian machine, idempotently:
# Debian packages, Node.js 22, npm packages, and the Go-built control-plane binaries.
# Source it (so Node 22 stays on PATH) or run it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

debs=(postgresql mariadb-server docker-registry apache2-utils openssh-server openssh-client git openssl iproute2 procps)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # Package scripts must not start system-wide servers; the tests start their own on loopback.
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# shellcheck source=scripts/node22.sh
source "$here/scripts/node22.sh"

cd "$here"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

PTAH_K8S_BIN="$(bash "$here/test/env/build-binaries.sh" | tail -1)"
export PTAH_K8S_BIN
