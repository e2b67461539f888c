#!/usr/bin/env bash
# A NetworkPolicy enforcer on the Kind cluster: the bridge CNI of cni.sh
# enforces nothing, so the RolisCluster NetworkPolicies (docs/operations.md,
# "Network policy") would be decoration.
# kube-router's firewall alone (--run-firewall; no routing, no service
# proxy, no CNI of its own): iptables and ipset rules per node, built from
# its Go module (no image can be pulled),
# github.com/cloudnativelabs/kube-router/v2@$KUBE_ROUTER_VERSION, ./cmd/kube-router,
# in an image with Debian's iptables and ipset, run as a DaemonSet on the
# host network. It filters bridged pod-to-pod traffic too (physdev).
# Why not kube-network-policies (the agent made for Kind): it sends each
# new connection to user space with nftables' `queue` expression, and the
# kernels of this project's machines are built without it
# (CONFIG_NFT_QUEUE unset; `nft add rule ... queue` fails with "No such file
# or directory"), so it enforced nothing and logged netlink errors.
# kube-router needs only ip_set and the xtables matches, which they have.
# A kube-network-policies DaemonSet in kube-system is deleted: one enforcer
# per node.
# Idempotent; the binary is cached in $ROLIS_CACHE/kube-router/VERSION.
source "$(dirname "$0")/lib.sh"
V="${KUBE_ROUTER_VERSION:-v2.1.0}"
need_docker
need_api
DIR="$CACHE/kube-router/$V"
IMAGE="local/kube-router:$V"
TOOLS_BASE="local/rolis-base-iptables:bookworm"

build() {
  [ -x "$DIR/bin/kube-router" ] && { info "binary cached in $DIR/bin"; return; }
  if [ ! -f "$DIR/src/.prepared" ]; then
    local mod; mod=$(go mod download -json "github.com/cloudnativelabs/kube-router/v2@$V" | jq -r .Dir)
    [ -d "$mod/cmd/kube-router" ] || die "kube-router $V: no cmd/kube-router in the module"
    rm -rf "$DIR/src"; mkdir -p "$DIR"; cp -r "$mod" "$DIR/src"; chmod -R u+w "$DIR/src"; touch "$DIR/src/.prepared"
  fi
  log "building kube-router $V (a few minutes on 2 busy cores, cached afterwards)"
  mkdir -p "$DIR/bin"
  (cd "$DIR/src" && GOWORK=off CGO_ENABLED=0 "${NICE[@]}" go build -mod=mod -trimpath \
    -ldflags "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$V" -o "$DIR/bin/" ./cmd/kube-router)
}

image() {
  # kube-router runs iptables-save/-restore and ipset: Debian's (nf_tables
  # backend, as the nodes' own iptables).
  if ! image_exists "$TOOLS_BASE"; then
    local ctx; ctx=$(mktemp -d)
    cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $BASE_IMAGE
RUN apt-get update -q && apt-get install -y -q --no-install-recommends iptables ipset && apt-get clean \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
DOCKERFILE
    docker_build -q --network host -t "$TOOLS_BASE" "$ctx" >/dev/null
    rm -rf "$ctx"
  fi
  component_image "$IMAGE" "$DIR/bin/kube-router" "$TOOLS_BASE" entrypoint
  kind_load "$IMAGE"
}

install() {
  kubectl -n kube-system delete daemonset/kube-network-policies --ignore-not-found >/dev/null
  # The image's id in the pod template: a rebuilt image (same tag) rolls
  # the pods.
  local id; id=$(docker image inspect -f '{{.Id}}' "$IMAGE" | cut -d: -f2 | cut -c1-16)
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: kube-router, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kube-router}
rules:
  - apiGroups: [""]
    resources: [namespaces, pods, services, nodes, endpoints]
    verbs: [list, get, watch]
  - apiGroups: [networking.k8s.io]
    resources: [networkpolicies]
    verbs: [list, get, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, get, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kube-router}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kube-router}
subjects: [{kind: ServiceAccount, name: kube-router, namespace: kube-system}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-router
  namespace: kube-system
  labels: {k8s-app: kube-router}
spec:
  selector:
    matchLabels: {k8s-app: kube-router}
  template:
    metadata:
      labels: {k8s-app: kube-router}
      annotations: {rolis.io/image-id: "$id"}
    spec:
      priorityClassName: system-node-critical
      serviceAccountName: kube-router
      hostNetwork: true
      tolerations: [{operator: Exists}]
      containers:
        - name: kube-router
          image: $IMAGE
          imagePullPolicy: IfNotPresent
          args:
            - --run-router=false
            - --run-firewall=true
            - --run-service-proxy=false
            - --enable-cni=false
            - --health-port=20244
          env:
            - name: NODE_NAME
              valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
          securityContext: {privileged: true}
          resources: {requests: {cpu: 20m, memory: 32Mi}}
          livenessProbe:
            httpGet: {path: /healthz, port: 20244}
            initialDelaySeconds: 10
            periodSeconds: 10
          volumeMounts:
            - {name: lib-modules, mountPath: /lib/modules, readOnly: true}
            - {name: xtables-lock, mountPath: /run/xtables.lock}
      volumes:
        - name: lib-modules
          hostPath: {path: /lib/modules}
        - name: xtables-lock
          hostPath: {path: /run/xtables.lock, type: FileOrCreate}
YAML
  kubectl -n kube-system rollout status daemonset/kube-router --timeout=300s >/dev/null
  info "kube-router (firewall only) runs on every node"
}

step "kube-router $V binary" build
step "kube-router image" image
step "kube-router install" install
