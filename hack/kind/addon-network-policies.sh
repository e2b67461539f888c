#!/usr/bin/env bash
# A NetworkPolicy enforcer on the Kind cluster: the bridge CNI of cni.sh
# enforces nothing, so the RolisCluster NetworkPolicies (docs/operations.md,
# "Network policy") would be decoration. kube-network-policies is the
# policy agent made for Kind (nftables and NFQUEUE on each node, no CNI
# change); it is built from its Go module (no image can be pulled):
# sigs.k8s.io/kube-network-policies@$KUBE_NETWORK_POLICIES_VERSION, ./cmd, a
# static binary in one image, loaded into the nodes, run by the module's own
# install.yaml with our image. NRI is off (the nodes' containerd does not
# enable it): the agent learns pod IPs from the API server.
# Idempotent; the binary is cached in $ROLIS_CACHE/kube-network-policies/VERSION.
source "$(dirname "$0")/lib.sh"
V="${KUBE_NETWORK_POLICIES_VERSION:-v0.8.0}"
need_docker
need_api
DIR="$CACHE/kube-network-policies/$V"
IMAGE="local/kube-network-policies:$V"

build() {
  [ -x "$DIR/bin/netpol" ] && { info "binary cached in $DIR/bin"; return; }
  local mod; mod=$(go mod download -json "sigs.k8s.io/kube-network-policies@$V" | jq -r .Dir)
  [ -f "$mod/cmd/main.go" ] || die "kube-network-policies $V: no cmd/main.go in the module"
  rm -rf "$DIR/src"; mkdir -p "$DIR/bin"; cp -r "$mod" "$DIR/src"; chmod -R u+w "$DIR/src"
  log "building kube-network-policies $V (a few minutes on 2 busy cores, cached afterwards)"
  (cd "$DIR/src" && CGO_ENABLED=0 "${NICE[@]}" go build -mod=mod -trimpath -ldflags "-s -w" -o "$DIR/bin/netpol" ./cmd)
}

image() {
  component_image "$IMAGE" "$DIR/bin/netpol" "$BASE_IMAGE"
  kind_load "$IMAGE"
}

install() {
  local mod; mod=$(go mod download -json "sigs.k8s.io/kube-network-policies@$V" | jq -r .Dir)
  sed -e "s#image: registry.k8s.io/networking/kube-network-policies:.*#image: $IMAGE#" \
    -e 's#- /bin/netpol#- /usr/local/bin/netpol#' \
    -e 's#- --v=2#- --v=2\n        - --disable-nri#' "$mod/install.yaml" | kubectl apply -f - >/dev/null
  kubectl -n kube-system rollout status daemonset/kube-network-policies --timeout=300s >/dev/null
  info "kube-network-policies runs on every node"
}

step "kube-network-policies $V binary" build
step "kube-network-policies image" image
step "kube-network-policies install" install
