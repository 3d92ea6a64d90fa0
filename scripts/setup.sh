#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian machine, idempotently:
# Debian packages, Node.js 22, npm packages, and the Go-built control-plane binaries.
# Source it (so Node 22 stays on PATH) or run it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

debs=(postgresql mariadb-server docker-registry apache2-utils openssh-server openssh-client git openssl iproute2 procps time gettext-base)
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

# Operation Pods run as a non-root user on the local node agent and execute this checkout's code, so every
# directory above it must let other users pass (o+x). A checkout under a private temporary directory does
# not; open only the traversal bit, never reading, and say so.
if [ "$(id -u)" = 0 ]; then
  dir="$here"
  while [ "$dir" != "/" ]; do
    if [ "$(( 0$(stat -c %a "$dir") & 1 ))" = 0 ]; then
      echo "setup: allowing other users to traverse $dir (chmod o+x) so non-root Pods can run this checkout" >&2
      chmod o+x "$dir"
    fi
    dir="$(dirname "$dir")"
  done
fi

# shellcheck source=scripts/node22.sh
source "$here/scripts/node22.sh"

cd "$here"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

PTAH_K8S_BIN="$(bash "$here/test/env/build-binaries.sh" | tail -1)"
export PTAH_K8S_BIN

# The compiled programs (dist/, never committed): the manager and operation Pods run these bundles.
# Rebuilt only when a source file is newer than the last build.
if ! node --input-type=module -e "import { bundleIsCurrent } from './bin/launch.mjs'; process.exit(['ptah', 'ptah-runner', 'ptah-operator', 'kubectl-ptah'].every((p) => bundleIsCurrent('dist/' + p + '.mjs')) ? 0 : 1)"; then
  npm run --silent build
fi

# helm and promtool, from their Go modules, cached beside the control-plane binaries.
bash "$here/test/env/build-tools.sh" >/dev/null
