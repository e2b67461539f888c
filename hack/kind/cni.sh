#!/usr/bin/env bash
# Pod networking for a Kind cluster without kindnetd (its image cannot be had
# here): per node, a bridge CNI configuration with that node's pod range
# (spec.podCIDR, a /24 of $CLUSTER_CIDR), routes to the other nodes' ranges,
# and a MASQUERADE rule for traffic leaving the pod network (pods keep their
# own addresses between nodes). Done once from the host with docker exec, so
# nodes are Ready seconds after creation, then kept by the rolis-node-net
# DaemonSet (cni-daemonset.yaml). Idempotent.
source "$(dirname "$0")/lib.sh"
CLUSTER_CIDR="${CLUSTER_CIDR:-10.244.0.0/16}"
need_docker
q='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}'
nodes=""
for _ in $(seq 120); do   # every node has a podCIDR and an address
  nodes=$(kubectl get nodes -o jsonpath="$q" 2>/dev/null || true)
  [ -n "$nodes" ] && echo "$nodes" | awk 'NF < 3 {bad = 1} END {exit bad}' && break
  sleep 1
done
[ -n "$nodes" ] || die "no nodes with a pod range"
while read -r node cidr ip; do
  while read -r other ocidr oip; do
    [ "$other" = "$node" ] || docker exec "$node" ip route replace "$ocidr" via "$oip"
  done <<<"$nodes"
  docker exec "$node" sh -c "iptables -t nat -C POSTROUTING -s $CLUSTER_CIDR ! -d $CLUSTER_CIDR -j MASQUERADE 2>/dev/null \
    || iptables -t nat -A POSTROUTING -s $CLUSTER_CIDR ! -d $CLUSTER_CIDR -j MASQUERADE"
  printf '{"cniVersion":"0.4.0","name":"kind-bridge","plugins":[{"type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":false,"hairpinMode":true,"ipam":{"type":"host-local","ranges":[[{"subnet":"%s"}]],"routes":[{"dst":"0.0.0.0/0"}]}},{"type":"portmap","capabilities":{"portMappings":true}}]}\n' "$cidr" \
    | docker exec -i "$node" sh -c 'mkdir -p /etc/cni/net.d && cat > /etc/cni/net.d/.tmp && mv /etc/cni/net.d/.tmp /etc/cni/net.d/10-bridge.conflist'
  info "$node: pods $cidr, node $ip"
done <<<"$nodes"
proxy_image="registry.k8s.io/kube-proxy:$K8S_VERSION"
sed -e "s#@KUBE_PROXY_IMAGE@#$proxy_image#" -e "s#@CLUSTER_CIDR@#$CLUSTER_CIDR#" "$KIND_DIR/cni-daemonset.yaml" \
  | kubectl apply -f - >/dev/null
info "rolis-node-net DaemonSet applied"
