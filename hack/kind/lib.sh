# Shared helpers for the hack/kind scripts. Source it; do not run it.
#   ROLIS_CACHE   cache root (default ~/.cache/rolis); nothing here writes to the repo
#   KIND_CLUSTER  cluster name (default rolis)
#   KIND_WORKERS  worker nodes besides the control plane (default 3)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KIND_DIR="$ROOT/hack/kind"
CACHE="${ROLIS_CACHE:-$HOME/.cache/rolis}"
TOOLS_BIN="$CACHE/bin"
K8S_VERSION="${K8S_VERSION:-v1.36.3}"
K8S_BIN="$CACHE/k8s-bin/$K8S_VERSION"
KIND_VERSION="${KIND_VERSION:-v0.33.0}"
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
HELM_K8S_MINOR=37   # the k8s.io/client-go minor that helm v3.22.0 requires
KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION:-v5.8.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.14.2}"
KIND_CLUSTER="${KIND_CLUSTER:-rolis}"
KIND_WORKERS="${KIND_WORKERS:-3}"
# Images made here; the local/ prefix marks them as never pulled.
BASE_IMAGE="${BASE_IMAGE:-local/rolis-base:bookworm}"
KINDBASE_IMAGE="local/kindbase:bookworm"
NODE_IMAGE="local/kindnode:$K8S_VERSION"
export PATH="$TOOLS_BIN:$K8S_BIN:$PATH"
export DOCKER_HOST="${DOCKER_HOST:-unix:///var/run/docker.sock}"
# Long builds share 2 cores with other people's benchmarks: always lowest priority.
NICE=(nice -n 19 ionice -c3)

_t0_script=$(date +%s)
log()  { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
info() { printf '    %s\n' "$*" >&2; }
die()  { printf '\033[31mERROR: %s\033[0m\n' "$*" >&2; exit 1; }
# step NAME CMD...: runs CMD, prints its duration. Call it plainly (not after
# `if`, `||` or `&&`, where bash ignores `set -e` inside functions): a failing
# step ends the script, and the EXIT trap names it.
_step=""
step() {
  local name="$1"; shift; local s; s=$(date +%s)
  log "$name"
  _step="$name"
  "$@"
  _step=""
  info "$name: done in $(( $(date +%s) - s ))s"
}
_on_exit() {
  local rc=$?
  if ((rc != 0)) && [ -n "$_step" ]; then
    printf '\033[31mFAILED: %s (exit %d, after %ds in all)\033[0m\n' "$_step" "$rc" $(( $(date +%s) - _t0_script )) >&2
  fi
}
trap _on_exit EXIT
# Call at the end of a top-level script.
total_time() { log "total time: $(( $(date +%s) - _t0_script ))s"; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# ensure_packages PKG...: installs the Debian packages that are missing.
ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing Debian packages: ${missing[*]}"
  # No init system here: keep the package scripts from starting services
  # (dockerd must be started by docker-up.sh with the runc wrapper).
  local prc=/usr/sbin/policy-rc.d created=0
  if [ ! -e "$prc" ]; then printf '#!/bin/sh\nexit 101\n' | as_root tee "$prc" >/dev/null; as_root chmod 755 "$prc"; created=1; fi
  as_root apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  ((created == 0)) || as_root rm -f "$prc"
}

# go_tool NAME PKG@VERSION [LDFLAGS]: go install into $TOOLS_BIN, once per
# version and flags.
go_tool() {
  local name="$1" pkg="$2" ldf="${3:-}" ver="${2##*@}" stamp want
  stamp="$TOOLS_BIN/.$name.version"; want="$ver $(echo "$ldf" | sha256sum | cut -c1-8)"
  if [ -x "$TOOLS_BIN/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then return 0; fi
  log "building $name $ver with go install (cached afterwards)"
  local s; s=$(date +%s)
  mkdir -p "$TOOLS_BIN"
  GOBIN="$TOOLS_BIN" CGO_ENABLED=0 "${NICE[@]}" go install -trimpath -ldflags="-s -w $ldf" "$pkg"
  echo "$want" >"$stamp"
  info "built $name in $(( $(date +%s) - s ))s"
}
ensure_kind()      { go_tool kind "sigs.k8s.io/kind@$KIND_VERSION"; }
# Helm's Makefile stamps its version and the Kubernetes version it renders
# for (`helm template` without a cluster); `go install` alone would leave
# v1.20, older than the chart's kubeVersion.
ensure_helm() {
  go_tool helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION \
 -X helm.sh/helm/v3/internal/version.gitTreeState=clean \
 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$HELM_K8S_MINOR \
 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$HELM_K8S_MINOR"
}
ensure_kustomize() { go_tool kustomize "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"; }

docker_ok() { docker info >/dev/null 2>&1; }
need_docker() { docker_ok || die "no Docker daemon at $DOCKER_HOST: run hack/kind/docker-up.sh (make kind-up does)"; }
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
# The kubectl of the cluster's version (built by hack/build-k8s.sh).
kubectl() { "$K8S_BIN/kubectl" --context "kind-$KIND_CLUSTER" "$@"; }

# docker_build ARGS...: BuildKit through Debian's docker 20.10 client, whose
# daemon has BuildKit built in (the newer CLI on PATH wants a buildx plugin
# that is not installed). BuildKit builds only the stages a target needs.
docker_build() { DOCKER_BUILDKIT=1 /usr/bin/docker build "$@"; }

# component_image TAG BINARY FROM [ENTRYPOINT] [USER] [DIR]: an image with one
# binary in DIR (default /usr/local/bin; ENTRYPOINT non-empty: it is the
# entrypoint; USER: a uid:gid, for pods that ask runAsNonRoot).
component_image() {
  local tag="$1" bin="$2" from="$3" ep="${4:-}" user="${5:-}" dir="${6:-/usr/local/bin}"
  # Skip the build when the image already holds this binary on this base.
  local key; key=$( { sha256sum <"$bin"; echo "$from $ep $user"; [ "$dir" = /usr/local/bin ] || echo "$dir"
    docker image inspect -f '{{.Id}}' "$from" 2>/dev/null || true; } | sha256sum | cut -c1-16)
  if [ "$(docker image inspect -f '{{index .Config.Labels "io.rolis.inputs"}}' "$tag" 2>/dev/null || true)" = "$key" ]; then
    info "image $tag up to date"; return
  fi
  local ctx; ctx="$CACHE/images/ctx-$(echo "$tag" | tr /: __)"
  mkdir -p "$ctx"; cp -f "$bin" "$ctx/"
  {
    echo "FROM $from"
    echo "COPY $(basename "$bin") $dir/$(basename "$bin")"
    echo "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    [ -z "$ep" ] || echo "ENTRYPOINT [\"$dir/$(basename "$bin")\"]"
    [ -z "$user" ] || echo "USER $user"
    echo "LABEL io.rolis.inputs=$key"
  } >"$ctx/Dockerfile"
  docker_build -q -t "$tag" "$ctx" >/dev/null
  info "image $tag"
}

# kind_load IMAGE...: loads images into the nodes that lack them. (`kind load`
# decides with crictl, which the node image does not have, so it always
# copies; here the node's containerd is asked for the image's config digest,
# which is Docker's image ID.)
containerd_ref() { # docker reference -> containerd's normalized name
  local r="$1" first="${1%%/*}"
  [[ "$r" == */* ]] || { echo "docker.io/library/$r"; return; }
  if [[ "$first" == *.* || "$first" == *:* || "$first" == localhost ]]; then echo "$r"; else echo "docker.io/$r"; fi
}
kind_load() {
  local img id ref node m missing
  for img in "$@"; do
    id=$(docker image inspect -f '{{.Id}}' "$img") || die "no image $img"
    ref=$(containerd_ref "$img"); missing=()
    for node in $(kind get nodes --name "$KIND_CLUSTER"); do
      m=$(docker exec "$node" ctr -n k8s.io images ls "name==$ref" 2>/dev/null | awk 'NR == 2 {print $3}')
      if [ -z "$m" ] || [ "$(docker exec "$node" ctr -n k8s.io content get "$m" 2>/dev/null | jq -r .config.digest)" != "$id" ]; then
        missing+=("$node")
      fi
    done
    if ((${#missing[@]} == 0)); then info "$img already on every node"; continue; fi
    kind load docker-image --name "$KIND_CLUSTER" --nodes "$(IFS=,; echo "${missing[*]}")" "$img" 2>&1 \
      | { grep -v '^Image: .* not yet present' >&2 || true; }
    info "$img loaded into ${missing[*]}"
  done
}

# api_ready [SECONDS]: waits, at most SECONDS (default 60), for the cluster's
# API server to answer /readyz. A cluster that a restarted Docker daemon
# brought back lists its nodes Ready a while before its API server is ready
# again (a check at once failed `.ci/run` on a machine whose cluster had
# outlived its daemon).
api_ready() {
  local deadline=$((SECONDS + ${1:-60}))
  until kubectl get --raw /readyz --request-timeout=5s >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 2
  done
}

# need_api: api_ready, or stop with what /readyz said and what to do next.
need_api() {
  api_ready "${1:-60}" && return 0
  kubectl get --raw '/readyz?verbose' --request-timeout=5s 2>&1 | grep -v '^\[+\]' | tail -5 >&2 || true
  die "cluster kind-$KIND_CLUSTER is not reachable (no /readyz in ${1:-60} s): run hack/kind/cluster.sh, or hack/kind/down.sh and make kind-up to recreate it"
}

# kind_config: the cluster's Kind configuration. The controller manager and
# the scheduler run without leader election: with one control plane there is
# no one to hand over to, and on a loaded 2-core machine their lease renewals
# timed out, so they exited and restarted (29 and 38 times in hours here).
kind_config() {
  cat <<YAML
# Generated by hack/kind (lib.sh kind_config)
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  disableDefaultCNI: true
  podSubnet: ${CLUSTER_CIDR:-10.244.0.0/16}
kubeadmConfigPatches:
- |
  kind: KubeletConfiguration
  failCgroupV1: false
- |
  kind: ClusterConfiguration
  controllerManager:
    extraArgs:
    - name: enable-hostpath-provisioner
      value: "true"
    - name: leader-elect
      value: "false"
  scheduler:
    extraArgs:
    - name: leader-elect
      value: "false"
nodes:
- role: control-plane
YAML
  for _ in $(seq "$KIND_WORKERS"); do echo "- role: worker"; done
}
# kind_config_file: where cluster.sh keeps the configuration it created the
# cluster from.
kind_config_file() { echo "$CACHE/kind/$KIND_CLUSTER.yaml"; }
# cluster_current: the cluster has 1 + $KIND_WORKERS nodes and was created
# from kind_config as it is now.
cluster_current() {
  [ "$(kind get nodes --name "$KIND_CLUSTER" 2>/dev/null | wc -l)" -eq $((KIND_WORKERS + 1)) ] &&
    [ "$(kind_config)" = "$(cat "$(kind_config_file)" 2>/dev/null)" ]
}

# cluster_ready: the Docker daemon answers, the Kind cluster exists in the
# shape and configuration asked for, and every node is Ready (then `make
# kind-up` has nothing to do but its checks).
cluster_ready() {
  docker_ok && command -v kind >/dev/null && kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER" || return 1
  cluster_current || return 1
  local st; st=$(kubectl get nodes --request-timeout=10s -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null) || return 1
  [ -n "$st" ] && ! grep -qv '^True$' <<<"$st"
}
