#!/usr/bin/env bash
# Checks that the Kind cluster can run a database: a 3-replica StatefulSet
# with required anti-affinity (one pod per worker), a node-local volume each,
# headless-Service DNS names, TCP between pods across nodes, and a ClusterIP
# Service. Uses the kube-proxy image (it has socat and getent), which every
# node already holds. Cleans up after itself. Idempotent.
source "$(dirname "$0")/lib.sh"
NS=rolis-smoke
IMG="registry.k8s.io/kube-proxy:$K8S_VERSION"
need_api
kubectl delete namespace "$NS" --ignore-not-found --wait=true >/dev/null

apply() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $NS}
---
apiVersion: v1
kind: Service
metadata: {name: peers, namespace: $NS}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {app: smoke}
  ports: [{name: tcp, port: 7000}]
---
apiVersion: v1
kind: Service
metadata: {name: front, namespace: $NS}
spec:
  selector: {app: smoke}
  ports: [{name: tcp, port: 7000}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: smoke, namespace: $NS}
spec:
  serviceName: peers
  replicas: 3
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: smoke}}
  template:
    metadata: {labels: {app: smoke}}
    spec:
      terminationGracePeriodSeconds: 1
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: smoke}}
      containers:
        - name: smoke
          image: $IMG
          imagePullPolicy: Never
          command: [sh, -c, 'echo "\$HOSTNAME" > /data/name; exec socat TCP-LISTEN:7000,fork,reuseaddr SYSTEM:"cat /data/name"']
          readinessProbe: {tcpSocket: {port: 7000}, periodSeconds: 1}
          volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 64Mi}}
YAML
  kubectl -n "$NS" rollout status statefulset/smoke --timeout=180s >/dev/null
  kubectl -n "$NS" get pods -o wide >&2
}

check() {
  local nodes; nodes=$(kubectl -n "$NS" get pods -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l)
  [ "$nodes" -eq 3 ] || die "the 3 pods are on $nodes nodes"
  local pv; pv=$(kubectl get pv -o jsonpath='{range .items[*]}{.spec.claimRef.namespace}/{.spec.storageClassName}/{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}{"\n"}{end}' | grep -c "^$NS/standard/rolis-" || true)
  [ "$pv" -eq 3 ] || die "want 3 node-local volumes, found $pv"
  local i j got
  for i in 0 1 2; do
    for j in 0 1 2; do
      [ "$i" = "$j" ] && continue
      got=$(kubectl -n "$NS" exec "smoke-$i" -- sh -c "getent hosts smoke-$j.peers.$NS.svc.cluster.local >/dev/null && socat -T2 - TCP:smoke-$j.peers.$NS.svc.cluster.local:7000 </dev/null")
      [ "$got" = "smoke-$j" ] || die "smoke-$i -> smoke-$j.peers: got '$got'"
    done
  done
  got=$(kubectl -n "$NS" exec smoke-0 -- socat -T2 - "TCP:front.$NS.svc.cluster.local:7000" </dev/null)
  [[ "$got" == smoke-? ]] || die "ClusterIP Service front: got '$got'"
  info "3 pods on 3 nodes, 3 node-local volumes, headless DNS and TCP between every pair, ClusterIP Service: ok"
}

step "StatefulSet of 3 with volumes and anti-affinity" apply
step "DNS, cross-node TCP, Service" check
step "cleanup" kubectl delete namespace "$NS" --wait=true
total_time
