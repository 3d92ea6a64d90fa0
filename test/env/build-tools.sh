#!/usr/bin/env bash
# Builds the operator's packaging and monitoring tools from their Go modules through the Go module proxy,
# at pinned versions, into the same cache as build-binaries.sh: helm (helm.sh/helm/v4/cmd/helm) for the
# chart, promtool (github.com/prometheus/prometheus/cmd/promtool) for the alerting rules, and the OCI
# clients the artifact tests interoperate with: oras (oras.land/oras/cmd/oras) and cosign
# (github.com/sigstore/cosign/v2/cmd/cosign). A second run finds them and returns at once. Prints one line
# per tool: `name=path`.
set -euo pipefail

HELM_VERSION="${PTAH_HELM_VERSION:-v4.3.2}"
PROMETHEUS_VERSION="${PTAH_PROMETHEUS_VERSION:-v0.316.0}"
ORAS_VERSION="${PTAH_ORAS_VERSION:-v1.3.6}"
COSIGN_VERSION="${PTAH_COSIGN_VERSION:-v2.6.5}"
if [ -z "${PTAH_CACHE:-}" ]; then
  if [ "$(id -u)" = 0 ]; then PTAH_CACHE=/var/cache/ptah-operator; else PTAH_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ptah-operator"; fi
fi
export GOFLAGS="${GOFLAGS:-} -trimpath"
export CGO_ENABLED=0

# Tests that find a tool missing run this script, and test files may run side by side: one build at a time,
# so a second caller waits for the first and then finds the binary, instead of building into the same place.
mkdir -p "$PTAH_CACHE"
exec 9>"$PTAH_CACHE/.build-tools.lock"
flock 9

# build NAME MODULE_PACKAGE VERSION LDFLAGS [TAGS] -> prints the binary's path
build() {
  local name="$1" pkg="$2" version="$3" ldflags="$4" tags="${5:-}"
  local dir="$PTAH_CACHE/bin/$name-$version"
  if [ ! -x "$dir/$name" ]; then
    command -v go >/dev/null || { echo "build-tools: Go is required to build $name" >&2; exit 1; }
    echo "build-tools: building $name $version (a cold build takes several minutes)" >&2
    mkdir -p "$dir.tmp"
    GOBIN="$dir.tmp" go install -tags "$tags" -ldflags "$ldflags" "$pkg@$version"
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
  fi
  echo "$name=$dir/$name"
}

# Smallest first, so a new machine can run the OCI tests while the larger builds go on; promtool (the whole
# Prometheus module graph) is by far the longest.
build oras oras.land/oras/cmd/oras "$ORAS_VERSION" \
  "-s -w -X oras.land/oras/internal/version.Version=${ORAS_VERSION#v} -X oras.land/oras/internal/version.BuildMetadata="
build cosign github.com/sigstore/cosign/v2/cmd/cosign "$COSIGN_VERSION" \
  "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$COSIGN_VERSION"
build helm helm.sh/helm/v4/cmd/helm "$HELM_VERSION" \
  "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"
# v0.316.0 is release 3.16.0: the minor less 300.
IFS=. read -r _ prom_minor prom_patch <<<"${PROMETHEUS_VERSION#v}"
# remove_all_sd leaves out every service-discovery provider (the cloud SDKs and client-go, most of the module
# graph): the tests run only `promtool check rules` and `test rules`, which need none of them.
build promtool github.com/prometheus/prometheus/cmd/promtool "$PROMETHEUS_VERSION" \
  "-s -w -X github.com/prometheus/common/version.Version=3.$((prom_minor - 300)).$prom_patch" remove_all_sd
