#!/usr/bin/env bash
# Builds the Kind node image local/kindnode:$K8S_VERSION from sources, with no
# registry: `kind build node-image` cannot be used (it pulls images).
#  1. Kubernetes binaries from the k8s.io/kubernetes module (hack/build-k8s.sh)
#  2. etcd, coredns, pause and local-path-provisioner, at the versions kubeadm asks for
#  3. one image per control-plane component, tagged exactly as
#     `kubeadm config images list` prints (kubelet never needs to pull)
#  4. the node image: node.Dockerfile, then its containerd is filled with those
#     images (ctr import) and the container committed
# Idempotent and cached: binaries in $ROLIS_CACHE, images in Docker; the node
# image carries a hash of its inputs and is rebuilt only when they change.
source "$(dirname "$0")/lib.sh"
ensure_packages gcc libc6-dev jq
need_docker
image_exists "$KINDBASE_IMAGE" || "$KIND_DIR/base-images.sh" kindbase
image_exists "$BASE_IMAGE" || "$KIND_DIR/base-images.sh" rolis-base
LOCAL_PATH_VERSION="${LOCAL_PATH_VERSION:-v0.0.30}"
PROVISIONER_IMAGE="local/local-path-provisioner:$LOCAL_PATH_VERSION"

build_k8s() {
  # kube-apiserver last: hack/build-k8s.sh has no lock, and another user of the
  # cache (envtest) may be building it right now; two builds of one binary collide.
  "${NICE[@]}" "$ROOT/hack/build-k8s.sh" kubeadm kubelet kubectl kube-controller-manager \
    kube-scheduler kube-proxy >/dev/null
  if [ ! -x "$K8S_BIN/kube-apiserver" ]; then
    while pgrep -f -- "-o $K8S_BIN/kube-apiserver.tmp" >/dev/null; do
      info "another kube-apiserver build is running; waiting for it"; sleep 30
    done
    "${NICE[@]}" "$ROOT/hack/build-k8s.sh" kube-apiserver >/dev/null
  fi
}

# A small module that requires the etcd server: plain `go install` of it is
# refused because its go.mod has replace directives.
build_etcd() { # VERSION
  local dir="$CACHE/etcd/$1"
  [ -x "$dir/etcd" ] && return
  log "building etcd $1 from go.etcd.io/etcd/server/v3 (a few minutes, cached afterwards)"
  rm -rf "$dir/src"; mkdir -p "$dir/src"
  printf 'module rolis.local/etcd\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$1" >"$dir/src/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$dir/src/tools.go"
  (cd "$dir/src" && go mod tidy &&
    CGO_ENABLED=0 "${NICE[@]}" go build -trimpath -ldflags "-s -w" -o "$dir/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$dir/etcd.tmp" "$dir/etcd"
}

go_install_to() { # DIR PKG@VERSION
  local bin; bin="$1/$(basename "${2%@*}")"
  [ -x "$bin" ] && return
  log "building ${2} (cached afterwards)"
  mkdir -p "$1"
  GOBIN="$1" CGO_ENABLED=0 "${NICE[@]}" go install -trimpath -ldflags "-s -w" "$2"
}

build_pause() { # VERSION
  local dir="$CACHE/pause/$1"
  [ -x "$dir/pause" ] && return
  mkdir -p "$dir"
  local src; src="$CACHE/k8s-src/$K8S_VERSION/build/pause/linux/pause.c"
  [ -f "$src" ] || die "missing $src (hack/build-k8s.sh prepares the kubernetes source)"
  gcc -Os -Wall -Werror -static -DVERSION="$1" -o "$dir/pause" "$src"
  strip "$dir/pause"
}

step "Kubernetes $K8S_VERSION binaries" build_k8s
mapfile -t CP_IMAGES < <("$K8S_BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null)
((${#CP_IMAGES[@]} >= 7)) || die "kubeadm config images list printed: ${CP_IMAGES[*]}"
img_of() { printf '%s\n' "${CP_IMAGES[@]}" | grep -m1 "/$1:"; }
ETCD_TAG=$(img_of etcd); COREDNS_TAG=$(img_of coredns); PAUSE_TAG=$(img_of pause)
etcd_v="v${ETCD_TAG##*:}"; etcd_v="${etcd_v%-*}"       # 3.6.8-0 -> v3.6.8
coredns_v="${COREDNS_TAG##*:}"; pause_v="${PAUSE_TAG##*:}"

step "etcd $etcd_v" build_etcd "$etcd_v"
step "coredns $coredns_v" go_install_to "$CACHE/coredns/$coredns_v" "github.com/coredns/coredns@$coredns_v"
step "pause $pause_v" build_pause "$pause_v"
step "local-path-provisioner $LOCAL_PATH_VERSION" go_install_to "$CACHE/local-path/$LOCAL_PATH_VERSION" \
  "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION"

build_component_images() {
  local c
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    component_image "$(img_of "$c")" "$K8S_BIN/$c" scratch
  done
  # kube-proxy programs iptables: it needs the node's userland.
  component_image "$(img_of kube-proxy)" "$K8S_BIN/kube-proxy" "local/kindbase-rootfs:bookworm"
  component_image "$ETCD_TAG" "$CACHE/etcd/$etcd_v/etcd" "$BASE_IMAGE"
  component_image "$COREDNS_TAG" "$CACHE/coredns/$coredns_v/coredns" scratch entrypoint
  component_image "$PAUSE_TAG" "$CACHE/pause/$pause_v/pause" scratch entrypoint
  # kind's containerd config names its sandbox image pause:3.10.
  docker tag "$PAUSE_TAG" registry.k8s.io/pause:3.10
  component_image "$PROVISIONER_IMAGE" "$CACHE/local-path/$LOCAL_PATH_VERSION/local-path-provisioner" "$BASE_IMAGE"
}
step "control-plane images" build_component_images

PRELOAD=("${CP_IMAGES[@]}" registry.k8s.io/pause:3.10 "$PROVISIONER_IMAGE" "$BASE_IMAGE")

build_node() {
  local ctx="$CACHE/images/ctx-node"
  rm -rf "$ctx"; mkdir -p "$ctx"
  cp "$K8S_BIN/kubeadm" "$K8S_BIN/kubelet" "$K8S_BIN/kubectl" "$KIND_DIR/runc-wrapper-node" "$ctx/"
  cp "$KIND_DIR/node.Dockerfile" "$ctx/Dockerfile"
  sed -e "s#@PROVISIONER_IMAGE@#$PROVISIONER_IMAGE#g" -e "s#@HELPER_IMAGE@#$BASE_IMAGE#g" \
    "$KIND_DIR/local-path-storage.yaml" >"$ctx/default-storage.yaml"
  local inputs
  inputs=$( { (cd "$ctx" && sha256sum ./*); docker image inspect -f '{{.Id}}' "$KINDBASE_IMAGE" "${PRELOAD[@]}"; } | sha256sum | cut -c1-16)
  if [ "$(docker image inspect -f '{{index .Config.Labels "io.rolis.node-inputs"}}' "$NODE_IMAGE" 2>/dev/null)" = "$inputs" ]; then
    info "$NODE_IMAGE is up to date ($inputs)"; return
  fi
  docker_build -q --build-arg K8S_VERSION="$K8S_VERSION" --build-arg KINDBASE="$KINDBASE_IMAGE" \
    -t local/kindnode-stage:"$K8S_VERSION" "$ctx" >/dev/null
  local c=rolis-nodebuild
  docker rm -f "$c" >/dev/null 2>&1 || true
  docker run -d --name "$c" --privileged --cgroupns=private --tmpfs /run --tmpfs /tmp \
    --security-opt seccomp=unconfined -e container=docker local/kindnode-stage:"$K8S_VERSION" >/dev/null
  for _ in $(seq 60); do docker exec "$c" ctr version >/dev/null 2>&1 && break; sleep 1; done
  docker exec "$c" systemctl stop kubelet >/dev/null 2>&1 || true
  local i
  for i in "${PRELOAD[@]}"; do
    docker save "$i" | docker exec -i "$c" ctr -n k8s.io images import \
      --label=io.cri-containerd.pinned=pinned --no-unpack - >/dev/null
    info "preloaded $i"
  done
  docker stop -t 10 "$c" >/dev/null
  docker commit --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
    --change 'ENV container=docker' --change "LABEL io.rolis.node-inputs=$inputs" \
    "$c" "$NODE_IMAGE" >/dev/null
  docker rm "$c" >/dev/null
  docker rmi local/kindnode-stage:"$K8S_VERSION" >/dev/null 2>&1 || true
  info "$NODE_IMAGE: $(docker image inspect -f '{{.Size}}' "$NODE_IMAGE" | awk '{printf "%d MB", $1/1e6}')"
}
step "Kind node image $NODE_IMAGE" build_node
