#!/usr/bin/env bash
# One command from a fresh machine to a running local Kubernetes cluster
# (`make kind-up`): Docker daemon, base images, Kind node image, a cluster of
# 1 control plane + 3 workers with pod networking and node-local storage,
# then the add-ons (cert-manager, the prometheus-operator with a Prometheus,
# the NetworkPolicy enforcer kube-router). Every step is idempotent and
# cached ($ROLIS_CACHE, default ~/.cache/rolis): the first run builds
# Kubernetes, etcd and coredns from Go module sources (about 40 minutes on 2
# busy cores), later runs take seconds to a minute or two.
#   KIND_CLUSTER=rolis KIND_WORKERS=3 KIND_ADDONS="cert-manager prometheus-operator" KIND_SMOKE=1
# (KIND_ADDONS="" KIND_SMOKE=0: the cluster alone, as the quick e2e subset
# needs it; the add-ons build from source the first time.)
source "$(dirname "$0")/lib.sh"
KIND_ADDONS="${KIND_ADDONS-prometheus-operator cert-manager network-policies}"
KIND_SMOKE="${KIND_SMOKE:-1}"

step "Docker daemon" "$KIND_DIR/docker-up.sh"
step "base images" "$KIND_DIR/base-images.sh"
step "Kind node image" "$KIND_DIR/node-image.sh"
step "Kind cluster" "$KIND_DIR/cluster.sh"
if [ "$KIND_SMOKE" = 1 ]; then step "smoke test: StatefulSet, volumes, DNS, pod network" "$KIND_DIR/smoke.sh"; fi
# An add-on that fails does not take the cluster down with it: the others
# still run, and the failure is reported at the end (non-zero exit).
failed=()
for a in $KIND_ADDONS; do
  [ -x "$KIND_DIR/addon-$a.sh" ] || die "unknown add-on $a"
  log "add-on $a"; s=$(date +%s)
  if "$KIND_DIR/addon-$a.sh"; then info "add-on $a: done in $(( $(date +%s) - s ))s"
  else failed+=("$a"); log "add-on $a FAILED after $(( $(date +%s) - s ))s"; fi
done
log "cluster $KIND_CLUSTER is up: kubectl --context kind-$KIND_CLUSTER get nodes"
total_time
((${#failed[@]} == 0)) || die "add-ons that failed: ${failed[*]}"
