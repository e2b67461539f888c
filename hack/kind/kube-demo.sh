#!/usr/bin/env bash
# The Kubernetes part of the main job (hack/main.sh): local cluster and
# images (ensure.sh), helm install of the operator, kubectl apply of the
# sample RolisCluster, a short load with rolisctl through the client Service
# (from a pod of the rolis-tools image), kubectl get rolisclusters and the
# cluster's status. Idempotent: a re-run upgrades and re-applies in place and
# leaves the cluster and the database running.
source "$(dirname "$0")/lib.sh"
SAMPLE="$ROOT/config/samples/db_v1alpha1_roliscluster.yaml"
NAME=rolis-sample NS="${MAIN_NAMESPACE:-default}"
TAG="${IMAGE_TAG:-$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$ROOT/charts/rolis-operator/Chart.yaml")}"
ensure_helm

step "local cluster and images" "$KIND_DIR/ensure.sh"
step "helm upgrade --install rolis-operator (namespace rolis-system)" \
  helm --kube-context "kind-$KIND_CLUSTER" upgrade --install rolis-operator "$ROOT/charts/rolis-operator" \
    -n rolis-system --create-namespace --wait --timeout 5m --take-ownership
step "kubectl apply -f config/samples/db_v1alpha1_roliscluster.yaml" kubectl -n "$NS" apply -f "$SAMPLE"
wait_ready() {
  kubectl -n "$NS" wait --for=condition=Ready "roliscluster/$NAME" --timeout=300s >/dev/null || {
    kubectl -n "$NS" get roliscluster "$NAME" -o yaml; kubectl -n "$NS" get pods -o wide; return 1; }
  kubectl -n "$NS" get roliscluster "$NAME" \
    -o jsonpath='    leader {.status.leader}, epoch {.status.epoch}, watermark {.status.watermark.epoch}.{.status.watermark.ts}{"\n"}' >&2
}
step "waiting until $NAME is Ready (members up, leader elected)" wait_ready

# rolisctl in a pod of the tools image, through the client Service (which
# selects the leader). With TLS (the default where cert-manager runs) the pod mounts the
# cluster's client certificate and names the Services by the names the
# members' certificate carries.
load() {
  local pod=rolisctl-main tls="" mode
  mode=$(kubectl -n "$NS" get roliscluster "$NAME" -o jsonpath='{.metadata.annotations.db\.rolis\.io/tls-mode}')
  [ "$mode" != mutual ] || tls="--tls-ca=/etc/rolis/tls/ca.crt --tls-cert=/etc/rolis/tls/tls.crt --tls-key=/etc/rolis/tls/tls.key"
  echo "    members speak ${mode:-plaintext}" >&2
  kubectl -n "$NS" delete pod "$pod" --ignore-not-found --wait=true >/dev/null
  local script="
      ctl() { rolisctl $tls --endpoint=$NAME.$NS.svc:7000 \"\$@\"; }
      echo '\$ rolisctl put greeting hello; rolisctl get greeting'
      ctl put greeting hello; ctl get greeting
      echo '\$ rolisctl bench --workload=ycsbpp --seconds=5 --keys=10000'
      ctl bench --workload=ycsbpp --seconds=5 --warmup=1 --keys=10000 --json | tail -n 12"
  local volumes="" mounts=""
  if [ -n "$tls" ]; then
    volumes="volumes: [{name: tls, secret: {secretName: $NAME-client-tls}}]"
    mounts="volumeMounts: [{name: tls, mountPath: /etc/rolis/tls, readOnly: true}]"
  fi
  kubectl -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $pod}
spec:
  restartPolicy: Never
  $volumes
  containers:
  - name: rolisctl
    image: rolis/rolis-tools:$TAG
    imagePullPolicy: IfNotPresent
    command: [/bin/bash, -ec, $(printf '%s' "$script" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')]
    $mounts
YAML
  local phase=""
  for _ in $(seq 180); do
    phase=$(kubectl -n "$NS" get pod "$pod" -o jsonpath='{.status.phase}' 2>/dev/null || true)
    [[ "$phase" == Succeeded || "$phase" == Failed ]] && break
    sleep 1
  done
  kubectl -n "$NS" logs "$pod"
  kubectl -n "$NS" delete pod "$pod" --wait=false >/dev/null
  [ "$phase" = Succeeded ] || die "the rolisctl pod ended $phase"
}
step "a short load with rolisctl through the client Service" load
# The members' admin ports take only the operator's namespace (the
# NetworkPolicy, docs/operations.md "Kubernetes security"): the status of
# every member comes from the operator, through the kubectl plugin.
step "kubectl rolis status $NAME" "$ROOT/bin/kubectl-rolis" --context "kind-$KIND_CLUSTER" -n "$NS" status "$NAME"
step "kubectl get rolisclusters" kubectl -n "$NS" get rolisclusters -o wide
step "kubectl get pods" kubectl -n "$NS" get pods -l app.kubernetes.io/instance="$NAME" -L role -o wide
total_time
