#!/usr/bin/env bash
# Monitoring on the Kind cluster:
#  - the prometheus-operator CRDs (ServiceMonitor, PodMonitor, ...) from the
#    github.com/prometheus-operator/prometheus-operator Go module, so that a
#    RolisCluster with spec.monitoring.enabled and the chart's ServiceMonitor apply;
#  - a real Prometheus (Debian's package, in an image on the project's base)
#    in namespace monitoring that scrapes the database pods (label
#    app.kubernetes.io/name=rolis, container port named "metrics") and the
#    operator's pods (app.kubernetes.io/name=rolis-operator). Debian's build
#    has no Kubernetes service discovery, so a small container beside it lists
#    those pods every 5 s into file_sd target files.
#    It does not read ServiceMonitors: that needs the prometheus-operator, which
#    is not built here (see docs/packaging.md, known gaps).
# Check: kubectl get --raw /api/v1/namespaces/monitoring/services/prometheus:9090/proxy/api/v1/targets
# Idempotent.
source "$(dirname "$0")/lib.sh"
PO_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}"
NS=monitoring
PROM_IMAGE=local/prometheus:bookworm
need_docker
need_api

crds() {
  local mod; mod=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PO_VERSION" | jq -r .Dir)
  # Server-side: these CRDs are larger than the last-applied annotation allows.
  kubectl apply --server-side --force-conflicts -f "$mod/example/prometheus-operator-crd/" >/dev/null
  # Right after creation the CRD may have no status yet, and kubectl wait
  # fails at once ("status.conditions accessor error"): retry, bounded.
  local i
  for i in $(seq 30); do
    kubectl wait --for=condition=Established crd/servicemonitors.monitoring.coreos.com --timeout=60s >/dev/null 2>&1 && break
    ((i < 30)) || die "CRD servicemonitors.monitoring.coreos.com not Established"
    sleep 2
  done
  info "prometheus-operator $PO_VERSION CRDs: $(ls "$mod/example/prometheus-operator-crd/" | wc -l)"
}

image() {
  if ! image_exists "$PROM_IMAGE"; then
    local ctx; ctx=$(mktemp -d)
    cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $BASE_IMAGE
RUN apt-get update -q && apt-get install -y -q prometheus && apt-get clean \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \\
 && install -d -o 65532 -g 65532 /prometheus
USER 65532:65532
ENTRYPOINT ["/usr/bin/prometheus"]
DOCKERFILE
    docker_build -q --network host -t "$PROM_IMAGE" "$ctx" >/dev/null
    rm -rf "$ctx"
  fi
  kind_load "$PROM_IMAGE"
  info "$PROM_IMAGE ($(docker run --rm "$PROM_IMAGE" --version 2>&1 | head -1)) loaded"
}

deploy() {
  local applied
  applied=$(sed "s#@KUBE_PROXY_IMAGE@#registry.k8s.io/kube-proxy:$K8S_VERSION#" <<'YAML' | kubectl apply -f -
apiVersion: v1
kind: Namespace
metadata: {name: monitoring}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: prometheus, namespace: monitoring}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: rolis-prometheus}
rules:
  - apiGroups: [""]
    resources: [pods, services, endpoints, nodes]
    verbs: [get, list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [get, list, watch]
  - nonResourceURLs: [/metrics]
    verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: rolis-prometheus}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: rolis-prometheus}
subjects: [{kind: ServiceAccount, name: prometheus, namespace: monitoring}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: prometheus, namespace: monitoring}
data:
  prometheus.yml: |
    global:
      scrape_interval: 10s
      evaluation_interval: 10s
    scrape_configs:
      - job_name: prometheus
        static_configs: [{targets: ["localhost:9090"]}]
      # Targets written by the discovery container below (file_sd).
      - job_name: rolis
        file_sd_configs: [{files: [/sd/rolis.json], refresh_interval: 10s}]
      - job_name: rolis-operator
        file_sd_configs: [{files: [/sd/rolis-operator.json], refresh_interval: 10s}]
  # Debian builds Prometheus without Kubernetes service discovery (it has no
  # client-go), so this loop does it: every pod of app.kubernetes.io/name=NAME
  # with a container port named "metrics" becomes a target, labelled with its
  # namespace, pod, cluster (instance label), role and node.
  discover.sh: |
    #!/bin/sh
    while true; do
      for name in rolis rolis-operator; do
        kubectl get pods -A -l "app.kubernetes.io/name=$name" -o json 2>/dev/null | jq '[
          .items[] | select(.status.podIP != null and .metadata.deletionTimestamp == null) | . as $p
          | .spec.containers[].ports[]? | select(.name == "metrics")
          | {targets: ["\($p.status.podIP):\(.containerPort)"],
             labels: {namespace: $p.metadata.namespace, pod: $p.metadata.name, node: $p.spec.nodeName,
                      cluster: ($p.metadata.labels["app.kubernetes.io/instance"] // ""),
                      role: ($p.metadata.labels.role // "")}}]' > "/sd/.$name.json" \
          && mv "/sd/.$name.json" "/sd/$name.json"
      done
      sleep 5
    done
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: prometheus, namespace: monitoring, labels: {app: prometheus}}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: prometheus}}
  template:
    metadata:
      labels: {app: prometheus}
    spec:
      serviceAccountName: prometheus
      securityContext: {runAsNonRoot: true, runAsUser: 65532, fsGroup: 65532}
      containers:
        - name: prometheus
          image: local/prometheus:bookworm
          imagePullPolicy: IfNotPresent
          args:
            - --config.file=/etc/prometheus/prometheus.yml
            - --storage.tsdb.path=/prometheus
            - --storage.tsdb.retention.time=2d
            - --web.enable-lifecycle
          ports: [{name: web, containerPort: 9090}]
          readinessProbe: {httpGet: {path: /-/ready, port: web}, periodSeconds: 5}
          resources: {requests: {cpu: 50m, memory: 128Mi}, limits: {memory: 1Gi}}
          volumeMounts:
            - {name: config, mountPath: /etc/prometheus}
            - {name: data, mountPath: /prometheus}
            - {name: sd, mountPath: /sd}
        - name: discovery
          # The kube-proxy image has sh and jq; kubectl is the node's.
          image: @KUBE_PROXY_IMAGE@
          imagePullPolicy: Never
          command: [/bin/sh, /etc/prometheus/discover.sh]
          resources: {requests: {cpu: 5m, memory: 16Mi}}
          volumeMounts:
            - {name: config, mountPath: /etc/prometheus}
            - {name: sd, mountPath: /sd}
            - {name: kubectl, mountPath: /usr/local/bin/kubectl, readOnly: true}
      volumes:
        - name: config
          configMap: {name: prometheus}
        - name: data
          emptyDir: {}
        - name: sd
          emptyDir: {}
        - name: kubectl
          hostPath: {path: /usr/bin/kubectl, type: File}
---
apiVersion: v1
kind: Service
metadata: {name: prometheus, namespace: monitoring, labels: {app: prometheus}}
spec:
  selector: {app: prometheus}
  ports: [{name: web, port: 9090, targetPort: web}]
YAML
)
  # A changed scrape configuration takes a restart (kubelet updates mounted
  # ConfigMaps only after a delay, so a reload could still read the old one).
  if grep -q "configmap/prometheus configured" <<<"$applied"; then
    kubectl -n "$NS" rollout restart deployment/prometheus >/dev/null
  fi
  kubectl -n "$NS" rollout status deployment/prometheus --timeout=180s >/dev/null
  local up=""
  for _ in $(seq 30); do   # the first scrape comes within one interval
    up=$(kubectl get --raw "/api/v1/namespaces/$NS/services/prometheus:9090/proxy/api/v1/query?query=up" 2>/dev/null \
      | jq -r '[.data.result[] | "\(.metric.job)/\(.metric.pod // .metric.instance)=\(.value[1])"] | join(" ")' || true)
    [ -n "$up" ] && break; sleep 2
  done
  [ -n "$up" ] || die "Prometheus answers no query"
  info "Prometheus up; targets: $up"
}

step "prometheus-operator CRDs" crds
step "Prometheus image" image
step "Prometheus" deploy
