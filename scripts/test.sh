#!/usr/bin/env bash
# Sets up a fresh machine and runs the whole test suite: typecheck, lint, then every test.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/setup.sh"
cd "$here"
npm run --silent typecheck
npm run --silent lint
npm test
