#!/usr/bin/env bash
# Creates the Kind cluster $KIND_CLUSTER (default rolis) from the local node
# image: one control plane and $KIND_WORKERS workers (default 3: the database's
# 3 members on 3 nodes, for node-level chaos and anti-affinity), no default CNI
# (cni.sh), node-local storage (local-path, the default StorageClass).
# Idempotent: an existing cluster made from the same configuration (lib.sh
# kind_config) is kept; one of another shape or configuration is recreated.
source "$(dirname "$0")/lib.sh"
need_docker
ensure_kind
image_exists "$NODE_IMAGE" || die "no node image $NODE_IMAGE: run hack/kind/node-image.sh"

# create: reuses the cluster when it was created from this very
# configuration (same shape, same settings), else creates it anew.
create() {
  local cfg; cfg=$(kind_config_file)
  if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
    if cluster_current; then
      info "cluster $KIND_CLUSTER exists ($((KIND_WORKERS + 1)) nodes, $cfg)"
      kind export kubeconfig --name "$KIND_CLUSTER" >/dev/null 2>&1
      reused=1
      return
    fi
    info "cluster $KIND_CLUSTER has another shape or configuration than $cfg ($((KIND_WORKERS + 1)) nodes): recreating"
    kind delete cluster --name "$KIND_CLUSTER"
  fi
  mkdir -p "$(dirname "$cfg")"
  kind_config >"$cfg"
  kind create cluster --name "$KIND_CLUSTER" --image "$NODE_IMAGE" --config "$cfg"
}

reused=0
wait_ready() {
  # A cluster that outlived its Docker daemon comes back slowly on a busy
  # machine (its API server answered after ~6 minutes at a load of 50), and
  # may not come back at all: then it is created again, once (~6 minutes).
  if [ "$reused" = 1 ] && ! api_ready 300; then
    info "cluster $KIND_CLUSTER came back without its API server: deleting it and creating it again"
    kind delete cluster --name "$KIND_CLUSTER"
    reused=0
    create
    "$KIND_DIR/cni.sh"
  fi
  need_api 120
  kubectl wait --for=condition=Ready nodes --all --timeout=180s >/dev/null
  kubectl -n kube-system rollout status deployment/coredns --timeout=180s >/dev/null
  kubectl -n kube-system rollout status daemonset/rolis-node-net --timeout=120s >/dev/null
  kubectl -n local-path-storage rollout status deployment/local-path-provisioner --timeout=120s >/dev/null
  kubectl get nodes -o wide >&2
}

step "kind create cluster $KIND_CLUSTER (1 control plane + $KIND_WORKERS workers)" create
step "pod network" "$KIND_DIR/cni.sh"
step "nodes, DNS, network and storage ready" wait_ready
