#!/usr/bin/env bash
# Makes the local cluster ready for the project's images: `make kind-up` when
# the cluster is missing or a node is not Ready (a Ready cluster is left as
# it is: up.sh would rerun its smoke test), then `make images` and
# `make kind-load` (both cached: unchanged images are neither rebuilt nor
# copied again). Used by hack/main.sh and hack/e2e.sh.
source "$(dirname "$0")/lib.sh"
ensure_kind
if cluster_ready; then info "cluster $KIND_CLUSTER is up and every node Ready"
else step "local cluster (make kind-up)" "$KIND_DIR/up.sh"; fi
step "images (make images)" "$KIND_DIR/images.sh"
step "images into the nodes (make kind-load)" "$KIND_DIR/load.sh"
total_time
