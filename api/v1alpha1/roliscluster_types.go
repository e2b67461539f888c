/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RolisClusterSpec is the desired state of a replicated Rolis database.
//
// Fields whose change would be unsafe on a running cluster are immutable and
// the API server rejects the change (see docs/operator.md, "Immutable fields").
// +kubebuilder:validation:XValidation:rule="!has(self.workerThreads) || !has(self.replicationStreams) || self.workerThreads <= self.replicationStreams",message="workerThreads must be at most replicationStreams: each worker commits on a replication stream of its own"
// +kubebuilder:validation:XValidation:rule="!(!has(oldSelf.tls) || !has(oldSelf.tls.enabled) || oldSelf.tls.enabled) || (!has(self.tls) || !has(self.tls.enabled) || self.tls.enabled)",message="tls.enabled cannot be turned off after creation: the operator moves a running plaintext cluster to mutual TLS in two rollouts, but not back; create a new cluster instead (docs/operations.md, Turning TLS on or off for a running cluster)"
// +kubebuilder:validation:XValidation:rule="(has(self.tables) ? self.tables : []) == (has(oldSelf.tables) ? oldSelf.tables : [])",message="tables is immutable: rolisd numbers tables in the order of --tables and replicates writes by that number, so every member must have the same list; create a new cluster instead"
type RolisClusterSpec struct {
	// Replicas is the number of members. It must be odd so that every
	// majority is strictly more than half and two majorities always meet.
	// Scaling goes one member at a time (see docs/operator.md).
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=7
	// +kubebuilder:validation:XValidation:rule="self % 2 == 1",message="replicas must be odd (1, 3, 5 or 7) so that majorities are well defined"
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Image is the rolisd container image.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +required
	Image string `json:"image"`

	// ImagePullPolicy of the rolisd container.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets for the rolisd image.
	// +optional
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// WorkerThreads is the number of engine worker threads of each member;
	// worker i commits on replication stream i, so at most
	// replicationStreams. A change rolls the pods one at a time (members
	// with different worker counts serve one cluster).
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	WorkerThreads int32 `json:"workerThreads,omitempty"`

	// ReplicationStreams is the number of replication streams (per-worker
	// Paxos logs), the same on every member: a member with another number
	// could never catch up, so it is fixed at creation. It bounds
	// workerThreads; a stream without a worker only sends heartbeats, one
	// per batch timeout while commits wait for the watermark, which costs
	// every member CPU per transaction (docs/operator.md, "Immutable
	// fields"). The default is the default workerThreads; set more to let
	// workerThreads grow later.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="replicationStreams is immutable: every member must run the same number of replication streams (a member restarted with another number cannot catch up); create a new cluster instead"
	// +optional
	ReplicationStreams int32 `json:"replicationStreams,omitempty"`

	// BatchSize is the number of transactions that close a replication batch.
	// A change rolls the pods.
	// +kubebuilder:default=200
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +optional
	BatchSize int32 `json:"batchSize,omitempty"`

	// BatchTimeout closes a batch that is not full, so light load still gets
	// low latency. Between 50us and 1s (MinBatchTimeout, MaxBatchTimeout:
	// rolisd's range too), any spelling of a Go duration. A change rolls the
	// pods.
	// +kubebuilder:default="1ms"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('50us') && duration(self) <= duration('1s')",message="batchTimeout must be between 50us and 1s"
	// +optional
	BatchTimeout *metav1.Duration `json:"batchTimeout,omitempty"`

	// Resources of the rolisd container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// PrefaultMemory is memory each member faults in at start, as huge pages
	// where the node allows them, and keeps for the engine (rolisd's
	// --prefault-memory with --huge-pages): the store then grows into it
	// without page faults, which made replicated TPC-C 14-21% faster on the
	// development VM (docs/operations.md, "Prefaulted memory"). It counts
	// toward the pod's memory from the start, so it must be below 90% of
	// resources.limits.memory, where rolisd starts refusing writes that add
	// data (checked by the operator, which changes nothing and reports
	// InvalidSpec otherwise); size it for the data set
	// plus headroom, and give the startup a few seconds per GiB. Unset:
	// none. A change rolls the pods.
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : !quantity(self).isLessThan(quantity('0'))",message="prefaultMemory cannot be negative"
	// +optional
	PrefaultMemory *resource.Quantity `json:"prefaultMemory,omitempty"`

	// Tables are created at start besides "kv" (rolisd's --tables, in this
	// order), so that clients can use them by name (c.Table("orders") in
	// pkg/client). Immutable: members number tables by their position and
	// replicate writes by that number, so all must have the same list.
	// +kubebuilder:validation:MaxItems=1023
	// +listType=atomic
	// +optional
	Tables []TableName `json:"tables,omitempty"`

	// LogLevel of rolisd (its --log-level). Unset: rolisd's default, info.
	// A change rolls the pods.
	// +kubebuilder:validation:Enum=trace;debug;info;warn;error;critical;off
	// +optional
	LogLevel string `json:"logLevel,omitempty"`

	// LogFormat of rolisd (its --log-format): json, one object a line, or
	// text. A change rolls the pods.
	// +kubebuilder:validation:Enum=json;text
	// +kubebuilder:default=json
	// +optional
	LogFormat string `json:"logFormat,omitempty"`

	// Durability says what a client's acknowledgement promises (rolisd's
	// --durability; docs/operations.md, "Durability"). disk: each member
	// writes its votes, its log and checkpoints to its volume (the
	// PersistentVolumeClaim at /var/lib/rolis) and syncs them before its
	// answer counts, so an acknowledged write is on a majority's disk and
	// survives a restart of every member. memory: the paper's mode, an
	// acknowledged write is in a majority's memory and a restart of a
	// majority loses everything. Immutable: a member that ran in memory
	// mode left its volume's state behind, and switching it back to disk
	// would bring back votes it has since broken (docs/operator.md,
	// "Immutable fields").
	// +kubebuilder:validation:Enum=disk;memory
	// +kubebuilder:default=disk
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="durability is immutable: a member switched from memory back to disk would recover votes from its volume that it has since broken, and a switch from disk to memory would change what acknowledged writes promise under running clients; create a new cluster instead"
	// +optional
	Durability Durability `json:"durability,omitempty"`

	// Storage of each member (one PersistentVolumeClaim per pod).
	// +kubebuilder:default={}
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// TLS of the client, admin, replication and metrics ports, with
	// certificates issued by cert-manager. On by default: without this
	// field (or with enabled unset) and with cert-manager installed, the
	// operator makes a CA for the cluster and issues from it; without
	// cert-manager the cluster runs in plaintext and says so in a
	// TLSDisabled condition (docs/operations.md, "Kubernetes security").
	// enabled cannot change after creation.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// ClientSelector selects the pods that may reach the client port when
	// the operator makes the cluster's NetworkPolicy. Unset: any pod of
	// any namespace.
	// +optional
	ClientSelector *metav1.LabelSelector `json:"clientSelector,omitempty"`

	// NetworkPolicy of the members' ports.
	// +optional
	NetworkPolicy NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// Monitoring creates a Prometheus ServiceMonitor for the members.
	// +optional
	Monitoring MonitoringSpec `json:"monitoring,omitempty"`

	// Failover tunes leader failure detection.
	// +kubebuilder:default={}
	// +optional
	Failover FailoverSpec `json:"failover,omitempty"`

	// Pod holds overrides of the pod template: scheduling and metadata.
	// +optional
	Pod PodOverrides `json:"pod,omitempty"`

	// FencedMembers are member ids (pod ordinals) taken out of voting and
	// serving without deleting them: the operator removes each from the
	// voting configuration, one at a time, through the leader's
	// ChangeMembership (switching over first when it leads), and labels its
	// pod role=fenced, out of the client Service, and db.rolis.io/serving=false,
	// out of the read Service (from the moment the fence is accepted). A fence that
	// would leave fewer voters than a majority of the cluster is refused
	// (condition Fenced, reason FenceRefused). Removing an id unfences: the
	// leader adds the member back, sending it the log it missed (or a
	// snapshot), once it answers (docs/operations.md, "Fencing a member").
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:Minimum=1
	// +listType=set
	// +optional
	FencedMembers []int32 `json:"fencedMembers,omitempty"`
}

// Durability is where a member keeps what it acknowledged: disk or memory.
type Durability string

// Durability modes (rolisd's --durability).
const (
	DurabilityDisk   Durability = "disk"
	DurabilityMemory Durability = "memory"
)

// TableName is a table of rolisd: letters, digits, '_', '-' and '.', at
// most 64 bytes (what rolisd's --tables accepts).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]+$`
type TableName string

// StorageSpec is the persistent storage of each member.
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="storage.storageClassName is immutable: the StatefulSet's volume claim templates cannot change"
type StorageSpec struct {
	// Size of each member's volume. Immutable (the StatefulSet's volume claim
	// templates cannot change; expand the PVCs themselves if the class allows).
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="storage.size is immutable: the StatefulSet's volume claim templates cannot change"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the volumes; empty uses the default class. Immutable.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// RetentionPolicy says whether the volumes are kept when the cluster is
	// deleted or scaled down. Both default to Retain: data outlives mistakes.
	// +optional
	RetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"retentionPolicy,omitempty"`
}

// TLSSpec asks cert-manager for the certificates of the cluster's
// identities (docs/operations.md, "Certificate identities").
type TLSSpec struct {
	// Enabled: false runs the cluster in plaintext (the status says so in
	// a TLSDisabled condition). Unset: true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// IssuerRef is the cert-manager Issuer or ClusterIssuer that signs the
	// member, operator and client certificates. Unset: the operator makes
	// a self-signed CA for the cluster (an Issuer <name>-ca).
	// +optional
	IssuerRef *IssuerReference `json:"issuerRef,omitempty"`
	// ReadOnlyClient also issues a client-readonly certificate (Secret
	// <name>-client-readonly-tls): the Rolis client service, reads only.
	// +optional
	ReadOnlyClient bool `json:"readOnlyClient,omitempty"`
}

// NetworkPolicySpec turns the cluster's NetworkPolicy on or off.
type NetworkPolicySpec struct {
	// Enabled makes a NetworkPolicy that admits the replication ports only
	// from the members, the admin port only from the operator's namespace,
	// the client port from spec.clientSelector and the metrics port from
	// spec.monitoring.namespaceSelector. Unset: true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// IssuerReference names a cert-manager issuer.
type IssuerReference struct {
	// Name of the issuer.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// Kind of the issuer.
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +kubebuilder:default=Issuer
	// +optional
	Kind string `json:"kind,omitempty"`
	// Group of the issuer.
	// +kubebuilder:default="cert-manager.io"
	// +optional
	Group string `json:"group,omitempty"`
}

// MonitoringSpec turns the Prometheus ServiceMonitor on or off.
type MonitoringSpec struct {
	// Enabled creates a ServiceMonitor (needs the prometheus-operator CRDs).
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// Interval between scrapes.
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Pattern=`^([0-9]+(ms|s|m|h))+$`
	// +optional
	Interval string `json:"interval,omitempty"`
	// Labels added to the ServiceMonitor, so that a Prometheus selects it.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// NamespaceSelector selects the namespaces whose pods may reach the
	// metrics port through the cluster's NetworkPolicy (where Prometheus
	// runs). Unset: any namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// FailoverSpec tunes failure detection.
type FailoverSpec struct {
	// Timeout is how long a leader that does not answer (or answers but
	// does not lead) may stay so before the operator fails over to the most
	// advanced replica. Between 1s and 10m. A leader known to be gone (its
	// pod deleted or being deleted, its container stopped or restarted,
	// nothing listening on its admin port) is failed over at once.
	// +kubebuilder:default="3s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('10m')",message="failover.timeout must be between 1s and 10m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// PodOverrides are merged into the pod template the operator builds.
type PodOverrides struct {
	// Labels added to the pods (the operator's own labels win).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations added to the pods.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Affinity replaces the default preferred anti-affinity across nodes.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// Tolerations of the pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// NodeSelector of the pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// PriorityClassName of the pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// ClusterPhase is a one-word summary of the cluster's state.
// +kubebuilder:validation:Enum=Pending;Creating;Running;FailingOver;Scaling;Upgrading;Degraded
type ClusterPhase string

// Phases.
const (
	PhasePending     ClusterPhase = "Pending"
	PhaseCreating    ClusterPhase = "Creating"
	PhaseRunning     ClusterPhase = "Running"
	PhaseFailingOver ClusterPhase = "FailingOver"
	PhaseScaling     ClusterPhase = "Scaling"
	PhaseUpgrading   ClusterPhase = "Upgrading"
	PhaseDegraded    ClusterPhase = "Degraded"
)

// Condition types.
const (
	// ConditionReady: every member is up, reachable and follows the leader.
	ConditionReady = "Ready"
	// ConditionAvailable: a leader is open for writes in the decided epoch.
	ConditionAvailable = "Available"
	// ConditionFailingOver: a failover or switchover is in progress.
	ConditionFailingOver = "FailingOver"
	// ConditionDegraded: something needs attention; the reason says what.
	ConditionDegraded = "Degraded"
	// ConditionProgressing: the operator is moving the cluster towards the spec.
	ConditionProgressing = "Progressing"
	// ConditionDataLoss: members report lost data, or a majority of them
	// came back with a state older than the decided epoch record; the
	// operator promotes no one until the volumes come back or the user
	// accepts the loss (docs/operations.md, "Data loss under the operator").
	ConditionDataLoss = "DataLoss"
)

// LogKey is a replication position (epoch, ts), ordered epoch first.
type LogKey struct {
	Epoch int64 `json:"epoch"`
	TS    int64 `json:"ts"`
}

// MemberStatus is what the operator last saw of one member.
type MemberStatus struct {
	// Name of the pod.
	Name string `json:"name"`
	// ID of the member (the pod ordinal).
	ID int32 `json:"id"`
	// Role reported by the member (Leader, Follower, Candidate, CatchingUp,
	// Standalone), or Unreachable.
	Role string `json:"role"`
	// Epoch the member is in.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
	// Watermark G as the member knows it.
	// +optional
	Watermark *LogKey `json:"watermark,omitempty"`
	// Lag is how far the member's replayed state is behind the leader's
	// watermark G, in the leader's commit time (0 for the leader); unset
	// when unknown (no serving leader, the member does not answer, or it
	// has not replayed anything of the leader's epoch yet).
	// +optional
	Lag *metav1.Duration `json:"lag,omitempty"`
	// Healthy as reported by the member.
	Healthy bool `json:"healthy"`
	// Version of rolisd the member reports.
	// +optional
	Version string `json:"version,omitempty"`
	// Durability the member reports: disk (it keeps its state on its
	// volume) or memory; unset when it does not say (an older rolisd).
	// +optional
	Durability string `json:"durability,omitempty"`
	// DataLossSuspected: the member came back without state while too few
	// members hold the cluster's data (Message says why); it neither votes
	// nor serves.
	// +optional
	DataLossSuspected bool `json:"dataLossSuspected,omitempty"`
	// Message says why the member is unreachable, unhealthy, or suspects
	// data loss.
	// +optional
	Message string `json:"message,omitempty"`
}

// RolisClusterStatus is the observed state of a RolisCluster.
type RolisClusterStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase summarises the state.
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`
	// Leader is the pod that leads the current epoch.
	// +optional
	Leader string `json:"leader,omitempty"`
	// Epoch is the latest decided epoch.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
	// Watermark is the leader's commit watermark G.
	// +optional
	Watermark *LogKey `json:"watermark,omitempty"`
	// Replicas is the number of members the StatefulSet runs.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of ready member pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Selector is the label selector of the member pods, for the scale
	// subresource (kubectl scale, autoscalers).
	// +optional
	Selector string `json:"selector,omitempty"`
	// ReplicationLag is the largest lag of a member that answers (see
	// MemberStatus.Lag); unset without a serving leader.
	// +optional
	ReplicationLag *metav1.Duration `json:"replicationLag,omitempty"`
	// ConfigHash is the hash of the engine settings the pods should run.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
	// Members is the last probe of every member.
	// +optional
	// +listType=map
	// +listMapKey=name
	Members []MemberStatus `json:"members,omitempty"`
	// LastSwitchover is the last planned switchover (a promote request or
	// a restart of the leader).
	// +optional
	LastSwitchover *SwitchoverRecord `json:"lastSwitchover,omitempty"`
	// FencedMembers are the members out of the voting configuration
	// because spec.fencedMembers names them.
	// +optional
	// +listType=set
	FencedMembers []int32 `json:"fencedMembers,omitempty"`
	// Conditions: Ready, Available, FailingOver, Degraded, Progressing,
	// DataLoss, Fenced.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RolisCluster is a replicated Rolis database.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=rolis,categories=rolis
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 45",message="metadata.name must be at most 45 characters: pod, service and certificate names are derived from it"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Leader",type=string,JSONPath=`.status.leader`
// +kubebuilder:printcolumn:name="Epoch",type=integer,JSONPath=`.status.epoch`
// +kubebuilder:printcolumn:name="Members",type=integer,JSONPath=`.status.readyReplicas`,description="ready member pods"
// +kubebuilder:printcolumn:name="Lag",type=string,JSONPath=`.status.replicationLag`,description="the largest replication lag of a member"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RolisCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RolisClusterSpec `json:"spec"`
	// +optional
	Status RolisClusterStatus `json:"status,omitempty"`
}

// RolisClusterList is a list of RolisClusters.
// +kubebuilder:object:root=true
type RolisClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolisCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RolisCluster{}, &RolisClusterList{})
}
