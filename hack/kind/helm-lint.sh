#!/usr/bin/env bash
# `make helm-lint`: the chart is in sync with config/ (sync-chart.sh --check),
# `helm lint --strict` is clean, and `helm template` renders with the default
# values and with every option turned on. With a running Kind cluster the
# rendered objects are also checked by the API server (kubectl --dry-run=server).
source "$(dirname "$0")/lib.sh"
CHART="$ROOT/charts/rolis-operator"
ensure_helm
"$KIND_DIR/sync-chart.sh" --check
[ -f "$CHART/files/manager-role.yaml" ] \
  || die "charts/rolis-operator/files/manager-role.yaml is missing: the operator's RBAC (config/rbac/role.yaml, controller-gen) is not generated yet"
ALL_ON=(--set replicaCount=2 --set metrics.serviceMonitor.enabled=true
  --set "metrics.serviceMonitor.labels.release=prometheus" --set logLevel=debug
  --set "extraArgs={--foo=bar}" --set "nodeSelector.kubernetes\.io/os=linux"
  --set dashboards.enabled=true --set alerts.enabled=true --set crds.keep=false
  --set image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef)
step "helm lint" helm lint --strict --kube-version "$K8S_VERSION" "$CHART"
step "helm lint (all options on)" helm lint --strict --kube-version "$K8S_VERSION" "$CHART" "${ALL_ON[@]}"
out="$CACHE/helm-lint"; mkdir -p "$out"
step "helm template" helm template rolis "$CHART" --kube-version "$K8S_VERSION" -n rolis-system >"$out/default.yaml"
step "helm template (all options on)" helm template rolis "$CHART" --kube-version "$K8S_VERSION" -n rolis-system "${ALL_ON[@]}" >"$out/all-on.yaml"
# The switches do what they say.
grep -q '^kind: CustomResourceDefinition' "$out/default.yaml" || die "crds.install (default true) rendered no CRD"
grep -q 'helm.sh/resource-policy: keep' "$out/default.yaml" || die "crds.keep (default true) did not keep the CRD"
! grep -q '^kind: PrometheusRule' "$out/default.yaml" || die "alerts.enabled=auto rendered a PrometheusRule without the API"
grep -q '^kind: PrometheusRule' "$out/all-on.yaml" || die "alerts.enabled=true rendered no PrometheusRule"
grep -q 'grafana_dashboard: "1"' "$out/all-on.yaml" || die "dashboards.enabled=true rendered no dashboard ConfigMap"
grep -q 'image: "rolis/rolis-operator@sha256:0123' "$out/all-on.yaml" || die "image.digest did not pin the operator's image"
helm template rolis "$CHART" -n rolis-system --api-versions monitoring.coreos.com/v1/PrometheusRule >"$out/with-api.yaml"
grep -q '^kind: PrometheusRule' "$out/with-api.yaml" || die "alerts.enabled=auto rendered no PrometheusRule with the API"
helm template rolis "$CHART" -n rolis-system --set crds.install=false >"$out/no-crds.yaml"
! grep -q '^kind: CustomResourceDefinition' "$out/no-crds.yaml" || die "crds.install=false rendered the CRD"
NAMESPACED=(--set "watchNamespaces={team-a,team-b}")
step "helm lint (namespaced RBAC)" helm lint --strict --kube-version "$K8S_VERSION" "$CHART" "${NAMESPACED[@]}"
step "helm template (namespaced RBAC)" helm template rolis "$CHART" --kube-version "$K8S_VERSION" -n rolis-system "${NAMESPACED[@]}" >"$out/namespaced.yaml"
info "rendered: $(grep -c '^kind:' "$out/default.yaml") objects (default), $(grep -c '^kind:' "$out/all-on.yaml") (all on), $(grep -c '^kind:' "$out/namespaced.yaml") (namespaced), in $out"

# The RBAC modes (docs/operations.md, "RBAC modes"). kinds_named FILE NAME
# lists "Kind namespace" of every rendered object called NAME.
kinds_named() {
  awk -v want="$2" '
    /^---/ { if (name == want) print kind " " ns; kind = ""; name = ""; ns = "-"; inmeta = 0; next }
    /^kind:/ { kind = $2 }
    /^metadata:/ { inmeta = 1; next }
    /^[^ ]/ { inmeta = 0 }
    inmeta && /^  name:/ { name = $2 }
    inmeta && /^  namespace:/ { ns = $2 }
    END { if (name == want) print kind " " ns }' "$1" | sort
}
expect_rbac() { # FILE WANT DESCRIPTION
  got=$(kinds_named "$1" rolis-rolis-operator | grep -E '^(ClusterRole|ClusterRoleBinding|Role|RoleBinding) ' | tr '\n' ';')
  [ "$got" = "$2" ] || die "RBAC ($3): want \"$2\", rendered \"$got\""
  info "RBAC ($3): $got"
}
expect_rbac "$out/default.yaml" "ClusterRole -;ClusterRoleBinding -;" "cluster-wide"
expect_rbac "$out/namespaced.yaml" "Role team-a;Role team-b;RoleBinding team-a;RoleBinding team-b;" "namespaced"
grep -q -- '--watch-namespace=team-a,team-b' "$out/namespaced.yaml" || die "namespaced mode: the operator is not started with --watch-namespace=team-a,team-b"
! grep -q -- '--watch-namespace' "$out/default.yaml" || die "cluster-wide mode: the operator must not get --watch-namespace"
grep -q -- '--metrics-secure=true' "$out/default.yaml" || die "the operator's metrics are not secure by default"
for f in default namespaced; do
  for r in metrics-auth metrics-reader; do
    [ -n "$(kinds_named "$out/$f.yaml" "rolis-rolis-operator-$r" | grep '^ClusterRole ')" ] || die "$f: no ClusterRole rolis-rolis-operator-$r"
  done
done
if [ -d "$ROOT/config/default" ]; then
  ensure_kustomize
  step "kustomize build config/default" sh -c "kustomize build '$ROOT/config/default' >'$out/kustomize.yaml'"
fi
if docker_ok && api_ready 0; then
  helm template rolis "$CHART" -n default "${ALL_ON[@]}" --skip-tests --set metrics.serviceMonitor.enabled=false \
    --set alerts.enabled=false >"$out/dry-run.yaml"
  step "server-side dry run on kind-$KIND_CLUSTER" sh -c \
    "'$K8S_BIN/kubectl' --context kind-$KIND_CLUSTER apply --dry-run=server -f '$out/dry-run.yaml' >/dev/null"
fi
total_time
