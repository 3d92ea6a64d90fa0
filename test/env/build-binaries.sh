#!/usr/bin/env bash
# Builds the real control-plane binaries (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler) and kubectl, at the control plane's version, from their Go modules through the Go module proxy, at pinned versions,
# into a cache outside the repository. A second run finds them and returns at once.
#
# k8s.io/kubernetes points its staging modules at ./staging with replace directives, which
# `go install pkg@version` refuses; so we build inside a small wrapper module that replaces
# each staging module with its published v0.x release of the same minor.
set -euo pipefail

K8S_VERSION="${PTAH_K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${PTAH_ETCD_VERSION:-v3.6.16}"
if [ -z "${PTAH_CACHE:-}" ]; then
  if [ "$(id -u)" = 0 ]; then PTAH_CACHE=/var/cache/ptah-operator; else PTAH_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ptah-operator"; fi
fi
CACHE="$PTAH_CACHE"
BIN="$CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"

need=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)
missing=0
for b in "${need[@]}"; do [ -x "$BIN/$b" ] || missing=1; done
if [ "$missing" = 0 ]; then echo "$BIN"; exit 0; fi

command -v go >/dev/null || { echo "build-binaries: Go is required (apt-get install golang or use the machine's Go)" >&2; exit 1; }
mkdir -p "$BIN"
# One build at a time: a second caller (a test file run beside another) waits, then finds the binaries.
exec 9>"$CACHE/.build-binaries.lock"
flock 9
missing=0
for b in "${need[@]}"; do [ -x "$BIN/$b" ] || missing=1; done
if [ "$missing" = 0 ]; then echo "$BIN"; exit 0; fi
work="$CACHE/build"
export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0

build_k8s() {
  local dir="$work/k8s-$K8S_VERSION"
  mkdir -p "$dir"
  cd "$dir"
  if [ ! -f go.sum ]; then
    go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
    local kmod
    kmod="$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/go.mod"
    {
      echo "module ptah.local/k8sbuild"
      echo
      echo "go $(awk '/^go /{print $2}' "$kmod")"
      echo
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo
      grep -E '=> \./staging/' "$kmod" | awk '{print $1}' | while read -r m; do
        # The sample modules are not published; nothing we build imports them.
        case "$m" in k8s.io/sample-*) continue ;; esac
        echo "replace $m => $m $STAGING_VERSION"
      done
    } > go.mod.new
    mv go.mod.new go.mod
    cat > tools.go <<'GO'
//go:build tools

package tools
GO
    for c in kube-apiserver kube-controller-manager kube-scheduler; do
      go get "k8s.io/kubernetes/cmd/$c@$K8S_VERSION"
    done
  fi
  # A wrapper made before kubectl joined the list has no go.sum entries for it yet.
  if [ ! -f .kubectl-resolved ]; then
    go get "k8s.io/kubernetes/cmd/kubectl@$K8S_VERSION"
    touch .kubectl-resolved
  fi
  local stamp="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    [ -x "$BIN/$c" ] && continue
    echo "build-binaries: building $c $K8S_VERSION (a cold build takes several minutes)" >&2
    go build -ldflags "-s -w $stamp" -o "$BIN/$c.tmp.$$" "k8s.io/kubernetes/cmd/$c"
    mv "$BIN/$c.tmp.$$" "$BIN/$c"
  done
}

build_etcd() {
  [ -x "$BIN/etcd" ] && return
  local dir="$work/etcd-$ETCD_VERSION"
  mkdir -p "$dir"
  cd "$dir"
  cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  if [ ! -f go.mod ]; then
    go mod init ptah.local/etcdbuild >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    go mod tidy
  fi
  echo "build-binaries: building etcd $ETCD_VERSION" >&2
  go build -ldflags "-s -w" -o "$BIN/etcd.tmp" .
  mv "$BIN/etcd.tmp" "$BIN/etcd"
}

build_etcd
build_k8s
echo "$BIN"
