/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// LabelNamespaceName is the label the API server puts on every namespace
// with its own name.
const LabelNamespaceName = "kubernetes.io/metadata.name"

func tcpPorts(ports ...int32) []networkingv1.NetworkPolicyPort {
	out := make([]networkingv1.NetworkPolicyPort, 0, len(ports))
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		port := intstr.FromInt32(p)
		out = append(out, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
	}
	return out
}

// NetworkPolicy admits traffic to the members port by port
// (docs/operations.md, "Network policy"); everything else is refused once
// any policy selects the pods:
//   - replication and accept-stream ports: only from the cluster's members;
//   - admin port: only from pods of the operator's namespace (any
//     namespace when the operator does not know its own, o.OperatorNamespace
//     empty: it then runs outside the cluster);
//   - client port: from the pods of the cluster's namespace that match
//     spec.clientSelector; unset, from anywhere;
//   - metrics port: from the namespaces of spec.monitoring.namespaceSelector;
//     unset, from anywhere (the kubelet probes it too).
func NetworkPolicy(c *dbv1.RolisCluster, o Options) *networkingv1.NetworkPolicy {
	members := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels(c)}}}

	var admin []networkingv1.NetworkPolicyPeer
	if o.OperatorNamespace != "" {
		admin = []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{LabelNamespaceName: o.OperatorNamespace},
		}}}
	}
	var clients []networkingv1.NetworkPolicyPeer
	if sel := c.Spec.ClientSelector; sel != nil {
		clients = []networkingv1.NetworkPolicyPeer{{PodSelector: sel.DeepCopy()}}
	}
	var scrapers []networkingv1.NetworkPolicyPeer
	if sel := c.Spec.Monitoring.NamespaceSelector; sel != nil {
		scrapers = []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel.DeepCopy()}}
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: objectMeta(c, NetworkPolicyName(c)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: SelectorLabels(c)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: tcpPorts(ReplicationPort, AcceptStreamPort), From: members},
				{Ports: tcpPorts(AdminPort), From: admin},
				{Ports: tcpPorts(ClientPort), From: clients},
				{Ports: tcpPorts(MetricsPort), From: scrapers},
			},
		},
	}
}
