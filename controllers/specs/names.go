/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

// Package specs builds every Kubernetes object of a RolisCluster with pure
// functions: same cluster in, same object out, no client, no clock. The
// controller only decides when to apply them; tests compare them.
package specs

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// Ports of rolisd (docs/operator.md lists them with the flags).
const (
	ClientPort      int32 = 7000
	AdminPort       int32 = 7001
	ReplicationPort int32 = 7002
	// AcceptStreamPort carries the leader's accepts to a member, framed
	// apart from gRPC (docs/replication.md, "Transport"); a fixed port, so
	// that a NetworkPolicy can name it.
	AcceptStreamPort int32 = 7003
	MetricsPort      int32 = 9090

	ClientPortName       = "client"
	AdminPortName        = "admin"
	ReplicationPortName  = "replication"
	AcceptStreamPortName = "accept-stream"
	MetricsPortName      = "metrics"
)

// Labels and annotations.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelRole is moved by the operator to the pod that leads the decided
	// epoch; the client Service selects role=leader.
	LabelRole = "role"
	// LabelPodIndex is set by the StatefulSet controller on every pod.
	LabelPodIndex = "apps.kubernetes.io/pod-index"
	// LabelService tells the cluster's Services apart (ServiceMonitor selects it).
	LabelService = "db.rolis.io/service"
	// LabelServing says whether a member pod takes reads through the read
	// Service, which selects ServingTrue: the operator keeps it beside
	// LabelRole, "false" on a fenced member (a Service selector cannot say
	// role!=fenced).
	LabelServing = "db.rolis.io/serving"

	AppName   = "rolis"
	ManagedBy = "rolis-operator"
	Component = "database"

	RoleLeader   = "leader"
	RoleFollower = "follower"
	// RoleFenced marks the pod of a fenced member (spec.fencedMembers), so
	// that the client Service does not select it.
	RoleFenced = "fenced"

	// Values of LabelServing.
	ServingTrue  = "true"
	ServingFalse = "false"

	// AnnotationConfigHash on the pod template is the hash of the engine
	// settings; a change makes a new StatefulSet revision (rolled by the
	// operator, followers first).
	AnnotationConfigHash = "db.rolis.io/config-hash"
)

// Volume and mount paths inside the rolisd container.
const (
	DataVolume   = "data"
	DataDir      = "/var/lib/rolis"
	TmpVolume    = "tmp"
	TLSVolume    = "tls"
	TLSDir       = "/etc/rolis/tls"
	RunAsUser    = int64(65532) // the image's rolis user (Dockerfile)
	ContainerRun = "rolisd"
)

// FirstOrdinal is the ordinal of the first pod (StatefulSet spec.ordinals.start).
// A member's id is its pod's ordinal; rolisd wants positive ids (0 means "no
// member" in its protocol), so ordinals start at 1: pods <name>-1 ... <name>-n.
const FirstOrdinal int32 = 1

// MemberIDs are the ids of a cluster of n members: 1..n.
func MemberIDs(n int32) []int32 {
	ids := make([]int32, 0, n)
	for id := FirstOrdinal; id < FirstOrdinal+n; id++ {
		ids = append(ids, id)
	}
	return ids
}

// Options are the operator-wide settings the builders need.
type Options struct {
	// ClusterDomain is the DNS suffix of the Kubernetes cluster.
	ClusterDomain string
	// OperatorNamespace is where the operator runs (its POD_NAMESPACE):
	// the NetworkPolicy admits the admin port from there only. Empty: the
	// operator runs outside the cluster.
	OperatorNamespace string
}

// DefaultOptions are those of a standard cluster.
func DefaultOptions() Options { return Options{ClusterDomain: "cluster.local"} }

// StatefulSetName is the name of the cluster's StatefulSet (and of its pods' prefix).
func StatefulSetName(c *dbv1.RolisCluster) string { return c.Name }

// HeadlessServiceName gives each pod a stable DNS name for peers.
func HeadlessServiceName(c *dbv1.RolisCluster) string { return c.Name + "-peers" }

// ClientServiceName selects the leader.
func ClientServiceName(c *dbv1.RolisCluster) string { return c.Name }

// ReadServiceName selects every ready serving member, for follower reads.
func ReadServiceName(c *dbv1.RolisCluster) string { return c.Name + "-read" }

// ConfigMapName holds the engine settings and the peer list.
func ConfigMapName(c *dbv1.RolisCluster) string { return c.Name + "-config" }

// EpochConfigMapName holds the decided epoch record (epoch, V).
func EpochConfigMapName(c *dbv1.RolisCluster) string { return c.Name + "-epoch" }

// LeaseName serializes promotions of one cluster.
func LeaseName(c *dbv1.RolisCluster) string { return c.Name + "-failover" }

// PDBName is the PodDisruptionBudget's name.
func PDBName(c *dbv1.RolisCluster) string { return c.Name }

// ServiceMonitorName is the ServiceMonitor's name.
func ServiceMonitorName(c *dbv1.RolisCluster) string { return c.Name }

// ServerCertificateName is the members' certificate (peer and client-facing).
func ServerCertificateName(c *dbv1.RolisCluster) string { return c.Name + "-server" }

// ServerSecretName holds the members' key pair and CA.
func ServerSecretName(c *dbv1.RolisCluster) string { return c.Name + "-server-tls" }

// ClientCertificateName is the certificate of clients (the operator, rolisctl).
func ClientCertificateName(c *dbv1.RolisCluster) string { return c.Name + "-client" }

// ClientSecretName holds the client key pair and CA.
func ClientSecretName(c *dbv1.RolisCluster) string { return c.Name + "-client-tls" }

// OperatorCertificateName is the operator's certificate (the admin port).
func OperatorCertificateName(c *dbv1.RolisCluster) string { return c.Name + "-operator" }

// OperatorSecretName holds the operator's key pair and CA.
func OperatorSecretName(c *dbv1.RolisCluster) string { return c.Name + "-operator-tls" }

// ReadOnlyClientCertificateName is the read-only client certificate.
func ReadOnlyClientCertificateName(c *dbv1.RolisCluster) string { return c.Name + "-client-readonly" }

// ReadOnlyClientSecretName holds the read-only client key pair and CA.
func ReadOnlyClientSecretName(c *dbv1.RolisCluster) string { return c.Name + "-client-readonly-tls" }

// SelfSignedIssuerName signs only the cluster's own CA.
func SelfSignedIssuerName(c *dbv1.RolisCluster) string { return c.Name + "-selfsigned" }

// CACertificateName is the cluster's own CA (without spec.tls.issuerRef).
func CACertificateName(c *dbv1.RolisCluster) string { return c.Name + "-ca" }

// CASecretName holds the cluster's own CA key pair.
func CASecretName(c *dbv1.RolisCluster) string { return c.Name + "-ca" }

// CAIssuerName issues the cluster's certificates from its own CA.
func CAIssuerName(c *dbv1.RolisCluster) string { return c.Name + "-ca" }

// NetworkPolicyName is the NetworkPolicy of the members.
func NetworkPolicyName(c *dbv1.RolisCluster) string { return c.Name }

// PodName is the name of the pod of member id (its ordinal).
func PodName(c *dbv1.RolisCluster, ordinal int32) string {
	return fmt.Sprintf("%s-%d", StatefulSetName(c), ordinal)
}

// PeerHost is the stable DNS name of a member.
func PeerHost(c *dbv1.RolisCluster, ordinal int32, o Options) string {
	return fmt.Sprintf("%s.%s.%s.svc.%s", PodName(c, ordinal), HeadlessServiceName(c), c.Namespace, o.ClusterDomain)
}

// ServiceHost is the DNS name of one of the cluster's Services.
func ServiceHost(c *dbv1.RolisCluster, service string, o Options) string {
	return fmt.Sprintf("%s.%s.svc.%s", service, c.Namespace, o.ClusterDomain)
}

// PeerAddress is a member's replication address.
func PeerAddress(c *dbv1.RolisCluster, id int32, o Options) string {
	return fmt.Sprintf("%s:%d", PeerHost(c, id, o), ReplicationPort)
}

// Peers is the --peers value for a membership of ids 1..members:
// "ID=HOST:PORT,..." with each member's replication address, itself included.
func Peers(c *dbv1.RolisCluster, members int32, o Options) string {
	parts := make([]string, 0, members)
	for _, id := range MemberIDs(members) {
		parts = append(parts, fmt.Sprintf("%d=%s", id, PeerAddress(c, id, o)))
	}
	return strings.Join(parts, ",")
}

// SelectorLabels select every pod of the cluster; they never change.
func SelectorLabels(c *dbv1.RolisCluster) map[string]string {
	return map[string]string{LabelName: AppName, LabelInstance: c.Name}
}

// Labels are put on every object of the cluster.
func Labels(c *dbv1.RolisCluster) map[string]string {
	l := SelectorLabels(c)
	l[LabelComponent] = Component
	l[LabelManagedBy] = ManagedBy
	return l
}

// OwnerReference makes the cluster the controller of an object, so deleting
// the cluster deletes it.
func OwnerReference(c *dbv1.RolisCluster) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         dbv1.GroupVersion.String(),
		Kind:               "RolisCluster",
		Name:               c.Name,
		UID:                c.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

func objectMeta(c *dbv1.RolisCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       c.Namespace,
		Labels:          Labels(c),
		OwnerReferences: []metav1.OwnerReference{OwnerReference(c)},
	}
}

func mergeLabels(base map[string]string, extra map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(extra))
	for k, v := range extra {
		out[k] = v
	}
	for k, v := range base { // the operator's own labels win
		out[k] = v
	}
	return out
}
