#!/usr/bin/env bash
# The end-to-end suite (e2e/, docs/e2e.md) on the local Kind cluster:
#   hack/e2e.sh quick   `make e2e`: install, leader pod deleted, follower's rolisd
#                       killed, every pod deleted, every rolisd killed
#   hack/e2e.sh full    `make e2e-full`: every scenario
# Brings the cluster up when it is not (hack/kind/ensure.sh: kind-up if
# needed, images, kind-load), then runs the Ginkgo suite with the label
# filter. E2E_ARGS adds test and Ginkgo flags (e.g. -ginkgo.focus=...).
# Artifacts of failed specs and the workload histories: build/e2e-artifacts.
# The quick subset needs neither cert-manager nor Prometheus, nor the smoke
# test (the suite checks the cluster itself), nor worker nodes (its failures
# are of pods, not nodes; anti-affinity is preferred), nor the upgrade
# scenario's second rolisd image. A cluster brought up for it is one node:
# a 4-node cluster kept a 2-core machine at a load of 40-50 with nothing else
# running, its API server restarting. `make e2e-full` recreates the 4 nodes.
# (Set before lib.sh, which gives KIND_WORKERS its default.)
if [ "${1:-quick}" = quick ]; then
  export KIND_ADDONS="${KIND_ADDONS-}" KIND_SMOKE="${KIND_SMOKE:-0}" KIND_WORKERS="${KIND_WORKERS:-0}" \
    KIND_LOAD_NEXT="${KIND_LOAD_NEXT:-0}"
fi
source "$(dirname "$0")/kind/lib.sh"
case "${1:-quick}" in
  quick) filter=quick ;;
  full)  filter="" ;;
  *) die "usage: hack/e2e.sh quick|full" ;;
esac
step "local cluster and images" "$KIND_DIR/ensure.sh"
if [ -z "$filter" ]; then
  # Every scenario: TLS needs cert-manager, the metrics and alerts ones the
  # prometheus-operator and its Prometheus (first: cert-manager's
  # ServiceMonitor needs its CRD), the security ones the NetworkPolicy
  # enforcer (idempotent: installed ones are left as they are).
  for a in prometheus-operator cert-manager network-policies; do step "add-on $a" "$KIND_DIR/addon-$a.sh"; done
fi
ensure_helm
# The suite is compiled, then run as a program: its progress streams (go test
# would hold a package's output until it ends).
step "compile the suite" go test -c -o "$ROOT/build/e2e.test" "$ROOT/e2e"
# Loading the images keeps the nodes busy; a control plane that restarted
# with its Docker daemon may still be restarting its API server.
step "API server ready" need_api 300
args=(-test.timeout 120m -ginkgo.v -ginkgo.show-node-events)
[ -z "$filter" ] || args+=(-ginkgo.label-filter="$filter")
run_suite() { cd "$ROOT/e2e" && ROLIS_E2E=1 KUBECTL="$K8S_BIN/kubectl" HELM="$TOOLS_BIN/helm" KUBE_CONTEXT="kind-$KIND_CLUSTER" \
  "${NICE[@]}" "$ROOT/build/e2e.test" "${args[@]}" ${E2E_ARGS:-}; }
step "e2e suite (${filter:-all scenarios})" run_suite
total_time
