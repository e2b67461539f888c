#!/usr/bin/env bash
# Monitoring on the Kind cluster, as users run it: the Prometheus Operator
# and a Prometheus it manages, in namespace monitoring, so that the
# ServiceMonitors (the operator's, each RolisCluster's with
# spec.monitoring.enabled) and the chart's PrometheusRule are read and
# evaluated for real (docs/e2e.md, "alerts" and "monitoring").
#  - prometheus-operator: cmd/operator and cmd/prometheus-config-reloader of
#    github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION,
#    built here (no image can be pulled). Why v0.93.1 and not v0.94.1 (the
#    version of the API module the project uses): the commands need the
#    module's pkg/client, a module of its own that the module proxy does not
#    serve at v0.94.0-v0.95.2; v0.93.1 is the newest release whose three
#    modules (root, pkg/apis/monitoring, pkg/client) all resolve. Its CRDs (example/prometheus-operator-crd) are applied too.
#  - Prometheus: cmd/prometheus of github.com/prometheus/prometheus@$PROMETHEUS_VERSION
#    (v0.316.0 is Prometheus 3.16.0), built here with only the Kubernetes
#    service discovery (tags remove_all_sd,enable_kubernetes_sd: the
#    operator's generated configuration uses kubernetes_sd_configs only; the
#    other discovery plugins bring in the cloud providers' SDKs). Debian's prometheus
#    package cannot serve: it is built without Kubernetes service discovery.
#    No web UI assets (they need npm): the HTTP API is complete.
#  - the Prometheus CR "rolis" selects every ServiceMonitor, PodMonitor and
#    PrometheusRule of every namespace; Service monitoring/prometheus:9090
#    in front of it (the e2e suite queries it through the API server's
#    service proxy). It scrapes and evaluates every 10 s.
# A Deployment or ConfigMap named prometheus in the namespace (a Prometheus
# run without the operator) is deleted: one Prometheus answers behind the
# Service.
# Check: kubectl get --raw /api/v1/namespaces/monitoring/services/prometheus:9090/proxy/api/v1/targets
# Idempotent; binaries cached in $ROLIS_CACHE/prometheus-operator/VERSION and
# $ROLIS_CACHE/prometheus/VERSION (the Prometheus build: 10-20 min on 2 busy
# cores, once).
source "$(dirname "$0")/lib.sh"
PO_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.93.1}"
PROM_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
# The module's v0.MAJORMINOR.PATCH is Prometheus vMAJOR.MINOR.PATCH.
PROM_RELEASE=$(sed -E 's/^v0\.([0-9])([0-9]{2})\.([0-9]+)$/v\1.\2.\3/; s/\.0([0-9])\./.\1./' <<<"$PROM_VERSION")
NS=monitoring
PO_DIR="$CACHE/prometheus-operator/$PO_VERSION"
PROM_DIR="$CACHE/prometheus/$PROM_VERSION"
OPERATOR_IMAGE="local/prometheus-operator:$PO_VERSION"
RELOADER_IMAGE="local/prometheus-config-reloader:$PO_VERSION"
PROM_IMAGE="local/prometheus:$PROM_RELEASE"
need_docker
need_api

# module_src MODULE@VERSION DIR: a writable copy of a module's source in DIR/src.
module_src() {
  [ -f "$2/src/.prepared" ] && return 0
  local mod; mod=$(go mod download -json "$1" | jq -r .Dir)
  [ -n "$mod" ] && [ "$mod" != null ] || die "$1 does not resolve on the module proxy"
  rm -rf "$2/src"; mkdir -p "$2"; cp -r "$mod" "$2/src"; chmod -R u+w "$2/src"
  touch "$2/src/.prepared"
}

build_operator() {
  if [ -x "$PO_DIR/bin/operator" ] && [ -x "$PO_DIR/bin/prometheus-config-reloader" ]; then
    info "binaries cached in $PO_DIR/bin"; return
  fi
  module_src "github.com/prometheus-operator/prometheus-operator@$PO_VERSION" "$PO_DIR"
  # The module replaces its API and client modules by its own directories,
  # which a module's zip leaves out (they are modules of their own): take
  # them from the proxy at the same version.
  local p=github.com/prometheus-operator/prometheus-operator/pkg
  (cd "$PO_DIR/src" && go mod edit -dropreplace "$p/apis/monitoring" -dropreplace "$p/client" \
    -require="$p/apis/monitoring@$PO_VERSION" -require="$p/client@$PO_VERSION")
  log "building prometheus-operator $PO_VERSION (a few minutes, cached afterwards)"
  mkdir -p "$PO_DIR/bin"
  (cd "$PO_DIR/src" && GOWORK=off CGO_ENABLED=0 "${NICE[@]}" go build -mod=mod -trimpath -ldflags "-s -w \
 -X github.com/prometheus/common/version.Version=${PO_VERSION#v}" \
    -o "$PO_DIR/bin/" ./cmd/operator ./cmd/prometheus-config-reloader)
}

build_prometheus() {
  [ -x "$PROM_DIR/bin/prometheus" ] && { info "binary cached in $PROM_DIR/bin"; return; }
  module_src "github.com/prometheus/prometheus@$PROM_VERSION" "$PROM_DIR"
  log "building Prometheus $PROM_RELEASE with Kubernetes service discovery only (10-20 min, cached afterwards)"
  mkdir -p "$PROM_DIR/bin"
  (cd "$PROM_DIR/src" && GOWORK=off CGO_ENABLED=0 "${NICE[@]}" go build -mod=mod -trimpath \
    -tags remove_all_sd,enable_kubernetes_sd \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=${PROM_RELEASE#v}" \
    -o "$PROM_DIR/bin/" ./cmd/prometheus)
}

images() {
  component_image "$OPERATOR_IMAGE" "$PO_DIR/bin/operator" "$BASE_IMAGE" entrypoint 65534:65534
  # The operator runs the reloader as /bin/prometheus-config-reloader.
  component_image "$RELOADER_IMAGE" "$PO_DIR/bin/prometheus-config-reloader" "$BASE_IMAGE" entrypoint 65534:65534 /bin
  # The operator passes Prometheus its flags only: the binary is the entrypoint.
  component_image "$PROM_IMAGE" "$PROM_DIR/bin/prometheus" "$BASE_IMAGE" entrypoint 65532:65532
  kind_load "$OPERATOR_IMAGE" "$RELOADER_IMAGE" "$PROM_IMAGE"
}

crds() {
  local mod; mod=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PO_VERSION" | jq -r .Dir)
  # Server-side: these CRDs are larger than the last-applied annotation allows.
  kubectl apply --server-side --force-conflicts -f "$mod/example/prometheus-operator-crd/" >/dev/null
  # Right after creation the CRD may have no status yet, and kubectl wait
  # fails at once ("status.conditions accessor error"): retry, bounded.
  local i
  for i in $(seq 30); do
    kubectl wait --for=condition=Established crd/servicemonitors.monitoring.coreos.com \
      crd/prometheuses.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com --timeout=60s >/dev/null 2>&1 && break
    ((i < 30)) || die "the prometheus-operator CRDs are not Established"
    sleep 2
  done
  info "prometheus-operator $PO_VERSION CRDs: $(ls "$mod/example/prometheus-operator-crd/" | wc -l)"
}

operator() {
  local mod; mod=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PO_VERSION" | jq -r .Dir)
  kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  # The module's own RBAC and Deployment, in this namespace, with the images
  # built here; no kubelet Service (nothing here scrapes the kubelets).
  local rbac="$mod/example/rbac/prometheus-operator"
  # The images' ids in the pod template: a rebuilt image (same tag) rolls
  # the pod.
  local id; id=$(docker image inspect -f '{{.Id}}' "$OPERATOR_IMAGE" "$RELOADER_IMAGE" | sha256sum | cut -c1-16)
  for f in service-account cluster-role cluster-role-binding deployment; do
    echo "---"; cat "$rbac/prometheus-operator-$f.yaml"
  done | sed -e "s#namespace: default#namespace: $NS#" \
    -e "s#image: quay.io/prometheus-operator/prometheus-operator:.*#image: $OPERATOR_IMAGE\n        imagePullPolicy: IfNotPresent#" \
    -e "s#--prometheus-config-reloader=.*#--prometheus-config-reloader=$RELOADER_IMAGE#" \
    -e '/--kubelet-service=/d; /--kubelet-endpoints=/d; /--kubelet-endpointslice=/d' \
    -e 's#cpu: 100m#cpu: 20m#' \
    -e "s#kubectl.kubernetes.io/default-container: prometheus-operator#&\n        rolis.io/image-id: \"$id\"#" \
    | kubectl apply -f - >/dev/null
  kubectl -n "$NS" rollout status deployment/prometheus-operator --timeout=180s >/dev/null
  info "prometheus-operator runs"
}

prometheus() {
  # A Prometheus run without the operator (see the header).
  kubectl -n "$NS" delete deployment/prometheus configmap/prometheus --ignore-not-found >/dev/null
  local id; id=$(docker image inspect -f '{{.Id}}' "$PROM_IMAGE" | cut -d: -f2 | cut -c1-16)
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: prometheus, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: rolis-prometheus}
rules:
  - apiGroups: [""]
    resources: [pods, services, endpoints, nodes]
    verbs: [get, list, watch]
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [get, list, watch]
  # The operator's /metrics (metrics.secure) admits a token allowed this.
  - nonResourceURLs: [/metrics]
    verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: rolis-prometheus}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: rolis-prometheus}
subjects: [{kind: ServiceAccount, name: prometheus, namespace: $NS}]
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: rolis, namespace: $NS}
spec:
  version: $PROM_RELEASE
  image: $PROM_IMAGE
  imagePullPolicy: IfNotPresent
  replicas: 1
  # A rebuilt image (same tag) rolls the pod.
  podMetadata: {annotations: {rolis.io/image-id: "$id"}}
  serviceAccountName: prometheus
  scrapeInterval: 10s
  evaluationInterval: 10s
  retention: 1d
  # Everything of every namespace: this is the cluster's only Prometheus.
  serviceMonitorSelector: {}
  serviceMonitorNamespaceSelector: {}
  podMonitorSelector: {}
  podMonitorNamespaceSelector: {}
  ruleSelector: {}
  ruleNamespaceSelector: {}
  resources: {requests: {cpu: 50m, memory: 128Mi}, limits: {memory: 1Gi}}
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    fsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
---
apiVersion: v1
kind: Service
metadata: {name: prometheus, namespace: $NS, labels: {app: prometheus}}
spec:
  selector: {app.kubernetes.io/name: prometheus, prometheus: rolis}
  ports: [{name: web, port: 9090, targetPort: web}]
YAML
  # The operator makes the StatefulSet a moment after the Prometheus object.
  local i
  for i in $(seq 60); do
    kubectl -n "$NS" get statefulset/prometheus-rolis >/dev/null 2>&1 && break
    ((i < 60)) || die "the prometheus-operator made no StatefulSet for Prometheus rolis: kubectl -n $NS logs deploy/prometheus-operator"
    sleep 2
  done
  kubectl -n "$NS" rollout status statefulset/prometheus-rolis --timeout=300s >/dev/null
  local ready=""
  for _ in $(seq 60); do
    ready=$(kubectl get --raw "/api/v1/namespaces/$NS/services/prometheus:9090/proxy/api/v1/status/buildinfo" 2>/dev/null \
      | jq -r "select(.status == \"success\") | .data.version // \"?\"" 2>/dev/null || true)
    [ -n "$ready" ] && break; sleep 2
  done
  [ -n "$ready" ] || die "Prometheus answers no query"
  local targets
  targets=$(kubectl get --raw "/api/v1/namespaces/$NS/services/prometheus:9090/proxy/api/v1/targets?state=active" \
    | jq -r '[.data.activeTargets[] | "\(.scrapePool)=\(.health)"] | group_by(.) | map("\(.[0]) x\(length)") | join(", ")')
  info "Prometheus ${ready} (operator-managed) up; targets: ${targets:-none yet}"
}

step "prometheus-operator $PO_VERSION binaries" build_operator
step "Prometheus $PROM_RELEASE binary" build_prometheus
step "images" images
step "prometheus-operator CRDs" crds
step "prometheus-operator" operator
step "Prometheus" prometheus
