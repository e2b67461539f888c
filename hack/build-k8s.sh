#!/usr/bin/env bash
# Builds Kubernetes binaries from the k8s.io/kubernetes module on the Go module
# proxy (no release downloads are reachable here) and caches them.
#   hack/build-k8s.sh kube-apiserver kubectl ...   -> prints the bin folder
# Idempotent: a binary already in the cache is not rebuilt.
set -euo pipefail
K8S_VERSION="${K8S_VERSION:-v1.36.3}"
CACHE="${ROLIS_CACHE:-$HOME/.cache/rolis}"
SRC="$CACHE/k8s-src/$K8S_VERSION"
BIN="$CACHE/k8s-bin/$K8S_VERSION"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"   # v1.36.3 -> v0.36.3
mkdir -p "$BIN"

need=()
for c in "$@"; do [ -x "$BIN/$c" ] || need+=("$c"); done
if ((${#need[@]} == 0)); then echo "$BIN"; exit 0; fi

if [ ! -f "$SRC/.prepared" ]; then
  echo "==> preparing k8s.io/kubernetes@$K8S_VERSION source in $SRC" >&2
  dir=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  rm -rf "$SRC"; mkdir -p "$(dirname "$SRC")"
  cp -r "$dir" "$SRC"; chmod -R u+w "$SRC"
  rm -rf "$SRC/go.work" "$SRC/go.work.sum" "$SRC/vendor"
  # The module replaces k8s.io/* with ./staging/...; use the published modules.
  sed -i -E "s#=> \./staging/src/(k8s\.io/[A-Za-z0-9._-]+)#=> \1 $STAGING_VERSION#" "$SRC/go.mod"
  touch "$SRC/.prepared"
fi

minor=$(echo "$K8S_VERSION" | cut -d. -f2)
LDF="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version/verflag.programName=kube"
for c in "${need[@]}"; do
  start=$(date +%s)
  echo "==> building $c $K8S_VERSION (the first build takes ~13 min on 2 cores; cached afterwards)" >&2
  (cd "$SRC" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "$LDF" -o "$BIN/$c.tmp" "./cmd/$c") >&2
  mv "$BIN/$c.tmp" "$BIN/$c"
  echo "==> built $c in $(( $(date +%s) - start ))s" >&2
done
echo "$BIN"
