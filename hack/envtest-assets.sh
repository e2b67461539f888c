#!/usr/bin/env bash
# Prepares the binaries envtest needs (kube-apiserver, etcd, kubectl) in one
# folder and prints that folder, for KUBEBUILDER_ASSETS:
#   export KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
# kube-apiserver (and kubectl) come from hack/build-k8s.sh, which builds them
# from the k8s.io/kubernetes module and caches them; etcd is Debian's
# etcd-server (/usr/bin/etcd), installed when missing. Idempotent and cached:
# the second run takes well under a second. Progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
K8S_VERSION="${K8S_VERSION:-v1.36.3}"
CACHE="${ROLIS_CACHE:-$HOME/.cache/rolis}"
ASSETS="$CACHE/envtest/$K8S_VERSION"
WANT_KUBECTL="${ENVTEST_KUBECTL:-auto}"   # yes | no | auto (only if already built)

if [ ! -x /usr/bin/etcd ]; then
  echo "==> installing etcd-server (Debian) for envtest" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends etcd-server >&2
fi

bin="$(K8S_VERSION="$K8S_VERSION" hack/build-k8s.sh kube-apiserver)"
mkdir -p "$ASSETS"
ln -sfn "$bin/kube-apiserver" "$ASSETS/kube-apiserver"
ln -sfn /usr/bin/etcd "$ASSETS/etcd"

# kubectl is optional for envtest; build it only when asked (it adds minutes
# cold), link it when it is already there.
if [ "$WANT_KUBECTL" = yes ]; then
  K8S_VERSION="$K8S_VERSION" hack/build-k8s.sh kubectl >/dev/null
fi
if [ "$WANT_KUBECTL" != no ] && [ -x "$bin/kubectl" ]; then
  ln -sfn "$bin/kubectl" "$ASSETS/kubectl"
fi

"$ASSETS/kube-apiserver" --version >&2 || { echo "kube-apiserver in $ASSETS does not run" >&2; exit 1; }
# Capture first, print after: `etcd --version | head -1` under pipefail fails
# at random when head closes the pipe before etcd has written everything.
etcd_version="$("$ASSETS/etcd" --version 2>/dev/null)" || { echo "etcd in $ASSETS does not run" >&2; exit 1; }
echo "${etcd_version%%$'\n'*}" >&2
echo "$ASSETS"
