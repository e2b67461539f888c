/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// Values of LabelService.
const (
	ServicePeers  = "peers"
	ServiceClient = "client"
	ServiceRead   = "read"
)

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{
		Name:       name,
		Port:       port,
		TargetPort: intstr.FromString(name),
		Protocol:   corev1.ProtocolTCP,
	}
}

// HeadlessService gives every member a stable DNS name
// (<pod>.<name>-peers.<ns>.svc) that exists before the pod is ready: peers
// must find each other to become ready at all, hence publishNotReadyAddresses.
// The ServiceMonitor scrapes its metrics port.
func HeadlessService(c *dbv1.RolisCluster) *corev1.Service {
	meta := objectMeta(c, HeadlessServiceName(c))
	meta.Labels[LabelService] = ServicePeers
	return &corev1.Service{
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 SelectorLabels(c),
			Ports: []corev1.ServicePort{
				servicePort(ClientPortName, ClientPort),
				servicePort(AdminPortName, AdminPort),
				servicePort(ReplicationPortName, ReplicationPort),
				servicePort(AcceptStreamPortName, AcceptStreamPort),
				servicePort(MetricsPortName, MetricsPort),
			},
		},
	}
}

// ClientService sends clients to the leader: it selects the pod labelled
// role=leader, which the operator moves only after the new leader opened its
// epoch.
func ClientService(c *dbv1.RolisCluster) *corev1.Service {
	meta := objectMeta(c, ClientServiceName(c))
	meta.Labels[LabelService] = ServiceClient
	sel := SelectorLabels(c)
	sel[LabelRole] = RoleLeader
	return &corev1.Service{
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: sel,
			Ports:    []corev1.ServicePort{servicePort(ClientPortName, ClientPort)},
		},
	}
}

// ReadService spreads read-only transactions over every ready serving
// member (followers serve them at their replayed watermark): it selects the
// pods labelled serving=true, which the operator keeps on every member but a
// fenced one.
func ReadService(c *dbv1.RolisCluster) *corev1.Service {
	meta := objectMeta(c, ReadServiceName(c))
	meta.Labels[LabelService] = ServiceRead
	sel := SelectorLabels(c)
	sel[LabelServing] = ServingTrue
	return &corev1.Service{
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: sel,
			Ports:    []corev1.ServicePort{servicePort(ClientPortName, ClientPort)},
		},
	}
}
