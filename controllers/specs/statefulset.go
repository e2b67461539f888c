/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// Environment variables of the rolisd container. rolisd reads every flag
// also from ROLISD_<FLAG> (flags win).
const (
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"
	EnvID           = "ROLISD_ID"
	EnvPeers        = "ROLISD_PEERS"
	// EnvBatchSize and EnvBatchTimeout carry the batching settings of the
	// replication layer (DESIGN.md: --batch-size, --batch-timeout). They are
	// environment variables rather than flags so that a rolisd built before
	// the replication layer, which does not know those flags, still starts.
	EnvBatchSize    = "ROLISD_BATCH_SIZE"
	EnvBatchTimeout = "ROLISD_BATCH_TIMEOUT"
	// EnvDataDir points rolisd at the data volume (DataDir, the
	// PersistentVolumeClaim's mount), EnvDurability says whether it keeps
	// its state there (spec.durability): docs/operations.md, "Durability".
	EnvDataDir    = "ROLISD_DATA_DIR"
	EnvDurability = "ROLISD_DURABILITY"
	// EnvPrefaultMemory and EnvHugePages are set only with
	// spec.prefaultMemory (docs/operations.md, "Prefaulted memory"): memory
	// faulted in at start as huge pages.
	EnvPrefaultMemory = "ROLISD_PREFAULT_MEMORY"
	EnvHugePages      = "ROLISD_HUGE_PAGES"
)

// RolisdArgs are the flags of the rolisd container. Settings that must be the
// same on every member of a revision (threads, batching) are literal values
// of the pod template, so a pod restarted in place keeps its revision's
// settings; the id comes from the pod's ordinal and the peer list from the
// ConfigMap (both through the environment, expanded by the kubelet).
func RolisdArgs(c *dbv1.RolisCluster, o Options) []string {
	args := []string{
		fmt.Sprintf("--id=$(%s)", EnvID),
		fmt.Sprintf("--peers=$(%s)", EnvPeers),
		fmt.Sprintf("--listen=0.0.0.0:%d", ClientPort),
		fmt.Sprintf("--admin-listen=0.0.0.0:%d", AdminPort),
		fmt.Sprintf("--metrics-listen=0.0.0.0:%d", MetricsPort),
		fmt.Sprintf("--accept-stream-port=%d", AcceptStreamPort),
		fmt.Sprintf("--advertise-address=$(%s).%s.%s.svc.%s:%d", EnvPodName, HeadlessServiceName(c), c.Namespace, o.ClusterDomain, ClientPort),
		"--election=none",    // the operator elects
		"--decider=operator", // and decides epoch records: members refuse DecideEpoch (docs/replication.md)
		fmt.Sprintf("--worker-threads=%d", c.WorkerThreads()),
		fmt.Sprintf("--replication-streams=%d", c.ReplicationStreams()),
		"--log-format=" + c.LogFormat(),
	}
	if c.TLSEnabled() {
		args = append(args,
			"--tls-cert="+TLSDir+"/tls.crt",
			"--tls-key="+TLSDir+"/tls.key",
			"--tls-ca="+TLSDir+"/ca.crt",
			FlagTLSTrustDomain+"="+TrustDomain(c),
		)
		if c.TLSAcceptPlaintext() {
			args = append(args, FlagTLSAcceptPlaintext)
		}
	}
	args = append(args, optionalEngineFlags(c)...)
	return args
}

// httpProbe checks a path of the metrics port, over HTTPS when the members
// use TLS (rolisd then serves the metrics port with its member certificate;
// the kubelet does not verify it).
func httpProbe(c *dbv1.RolisCluster, path string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString(MetricsPortName), Scheme: MetricsScheme(c),
		}},
		TimeoutSeconds:   1,
		PeriodSeconds:    period,
		SuccessThreshold: 1,
		FailureThreshold: failures,
	}
}

// DefaultAffinity spreads members over nodes when it can (preferred, so a
// small cluster still schedules).
func DefaultAffinity(c *dbv1.RolisCluster) *corev1.Affinity {
	return &corev1.Affinity{
		PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels(c)},
					TopologyKey:   corev1.LabelHostname,
				},
			}},
		},
	}
}

// RestrictedContainerSecurity follows the "restricted" Pod Security Standard.
func RestrictedContainerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(RunAsUser),
		RunAsGroup:               ptr.To(RunAsUser),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// PodTemplate is the pod of every member.
func PodTemplate(c *dbv1.RolisCluster, configHash string, o Options) corev1.PodTemplateSpec {
	annotations := map[string]string{}
	for k, v := range c.Spec.Pod.Annotations {
		annotations[k] = v
	}
	annotations[AnnotationConfigHash] = configHash
	// A restart request makes a new revision, which the operator rolls
	// the safe way (docs/operations.md, "Restarting members").
	if v := c.Annotations[dbv1.AnnotationRestartedAt]; v != "" {
		annotations[dbv1.AnnotationRestartedAt] = v
	}

	affinity := DefaultAffinity(c)
	if c.Spec.Pod.Affinity != nil {
		affinity = c.Spec.Pod.Affinity.DeepCopy()
	}

	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
		}}
	}
	env := []corev1.EnvVar{
		fieldEnv(EnvPodName, "metadata.name"),
		fieldEnv(EnvPodNamespace, "metadata.namespace"),
		fieldEnv(EnvID, fmt.Sprintf("metadata.labels['%s']", LabelPodIndex)),
		{Name: EnvPeers, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(c)},
			Key:                  KeyPeers,
		}}},
		{Name: EnvBatchSize, Value: strconv.Itoa(int(c.BatchSize()))},
		{Name: EnvBatchTimeout, Value: dbv1.BatchTimeoutFlag(c.BatchTimeout())},
		{Name: EnvDataDir, Value: DataDir},
		{Name: EnvDurability, Value: string(c.DurabilityMode())},
	}
	if b := c.PrefaultMemoryBytes(); b > 0 {
		env = append(env, corev1.EnvVar{Name: EnvPrefaultMemory, Value: strconv.FormatInt(b, 10)},
			corev1.EnvVar{Name: EnvHugePages, Value: "true"})
	}

	mounts := []corev1.VolumeMount{
		{Name: DataVolume, MountPath: DataDir},
		{Name: TmpVolume, MountPath: "/tmp"},
	}
	volumes := []corev1.Volume{
		{Name: TmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if c.TLSEnabled() {
		mounts = append(mounts, corev1.VolumeMount{Name: TLSVolume, MountPath: TLSDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: TLSVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: ServerSecretName(c), DefaultMode: ptr.To(int32(0o440))},
		}})
	}

	pullPolicy := c.Spec.ImagePullPolicy
	if pullPolicy == "" {
		pullPolicy = corev1.PullIfNotPresent
	}

	container := corev1.Container{
		Name:            ContainerRun,
		Image:           c.Spec.Image,
		ImagePullPolicy: pullPolicy,
		Args:            RolisdArgs(c, o),
		Env:             env,
		Ports: []corev1.ContainerPort{
			{Name: ClientPortName, ContainerPort: ClientPort, Protocol: corev1.ProtocolTCP},
			{Name: AdminPortName, ContainerPort: AdminPort, Protocol: corev1.ProtocolTCP},
			{Name: ReplicationPortName, ContainerPort: ReplicationPort, Protocol: corev1.ProtocolTCP},
			{Name: AcceptStreamPortName, ContainerPort: AcceptStreamPort, Protocol: corev1.ProtocolTCP},
			{Name: MetricsPortName, ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
		},
		Resources:    *c.Spec.Resources.DeepCopy(),
		VolumeMounts: mounts,
		// rolisd serves /healthz (the process works) and /readyz (serving:
		// not starting, not a candidate, not catching up) on the metrics
		// port. Readiness gates the read Service; leadership is the
		// operator's business, not the kubelet's.
		StartupProbe:             httpProbe(c, "/healthz", 2, 60),
		LivenessProbe:            httpProbe(c, "/healthz", 10, 6),
		ReadinessProbe:           httpProbe(c, "/readyz", 5, 2),
		SecurityContext:          RestrictedContainerSecurity(),
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}

	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      mergeLabels(Labels(c), c.Spec.Pod.Labels),
			Annotations: annotations,
		},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{container},
			Volumes:                       volumes,
			Affinity:                      affinity,
			Tolerations:                   c.Spec.Pod.Tolerations,
			NodeSelector:                  c.Spec.Pod.NodeSelector,
			PriorityClassName:             c.Spec.Pod.PriorityClassName,
			ImagePullSecrets:              c.Spec.ImagePullSecrets,
			AutomountServiceAccountToken:  ptr.To(false), // rolisd never calls the API server
			EnableServiceLinks:            ptr.To(false),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			DNSPolicy:                     corev1.DNSClusterFirst,
			SchedulerName:                 corev1.DefaultSchedulerName,
			TerminationGracePeriodSeconds: ptr.To(int64(30)),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:        ptr.To(true),
				RunAsUser:           ptr.To(RunAsUser),
				RunAsGroup:          ptr.To(RunAsUser),
				FSGroup:             ptr.To(RunAsUser),
				FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
				SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
		},
	}
}

// VolumeClaimTemplate is each member's data volume.
func VolumeClaimTemplate(c *dbv1.RolisCluster) corev1.PersistentVolumeClaim {
	size := mustQuantity(dbv1.DefaultStorageSize)
	if q := c.Spec.Storage.Size; q != nil && !q.IsZero() {
		size = q.DeepCopy()
	}
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: DataVolume, Labels: SelectorLabels(c)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: c.Spec.Storage.StorageClassName,
			VolumeMode:       ptr.To(corev1.PersistentVolumeFilesystem),
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: size},
			},
		},
	}
}

// RetentionPolicy keeps the volumes unless the spec says otherwise.
func RetentionPolicy(c *dbv1.RolisCluster) *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if r := c.Spec.Storage.RetentionPolicy; r != nil {
		if r.WhenDeleted != "" {
			p.WhenDeleted = r.WhenDeleted
		}
		if r.WhenScaled != "" {
			p.WhenScaled = r.WhenScaled
		}
	}
	return p
}

// StatefulSet runs `replicas` members, ids (ordinals) 1..replicas. The update strategy is OnDelete: the
// StatefulSet controller never restarts a member by itself; the operator
// deletes outdated pods in a safe order (followers first, one at a time, the
// leader last after a switchover). Pods start in parallel because a member
// can only become useful once a majority of its peers runs.
func StatefulSet(c *dbv1.RolisCluster, replicas int32, configHash string, o Options) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: objectMeta(c, StatefulSetName(c)),
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             ptr.To(replicas),
			Ordinals:                             &appsv1.StatefulSetOrdinals{Start: FirstOrdinal},
			Selector:                             &metav1.LabelSelector{MatchLabels: SelectorLabels(c)},
			ServiceName:                          HeadlessServiceName(c),
			PodManagementPolicy:                  appsv1.ParallelPodManagement,
			UpdateStrategy:                       appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			RevisionHistoryLimit:                 ptr.To(int32(10)),
			Template:                             PodTemplate(c, configHash, o),
			VolumeClaimTemplates:                 []corev1.PersistentVolumeClaim{VolumeClaimTemplate(c)},
			PersistentVolumeClaimRetentionPolicy: RetentionPolicy(c),
		},
	}
}
