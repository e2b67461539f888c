/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func sample() *dbv1.RolisCluster {
	return &dbv1.RolisCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "prod", UID: "uid-1"},
		Spec: dbv1.RolisClusterSpec{
			Replicas:      3,
			Image:         "local/rolisd:dev",
			WorkerThreads: 4,
			BatchSize:     200,
			BatchTimeout:  &metav1.Duration{Duration: 2 * time.Millisecond},
			Storage:       dbv1.StorageSpec{Size: ptr.To(resource.MustParse("2Gi")), StorageClassName: ptr.To("fast")},
			TLS:           &dbv1.TLSSpec{Enabled: ptr.To(false)},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			},
		},
	}
}

// golden compares obj with testdata/<name>.yaml (go test ./controllers/specs -update rewrites it).
func golden(t *testing.T, name string, obj any) {
	t.Helper()
	got, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name+".yaml")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./controllers/specs -update to create it)", err)
	}
	NewWithT(t).Expect(string(got)).To(Equal(string(want)), "%s differs from the golden file", name)
}

func TestBuildersMatchGoldenObjects(t *testing.T) {
	c, o := sample(), DefaultOptions()
	golden(t, "configmap", EngineConfigMap(c, 3, o))
	golden(t, "epoch-configmap", EpochConfigMap(c))
	golden(t, "service-peers", HeadlessService(c))
	golden(t, "service-client", ClientService(c))
	golden(t, "service-read", ReadService(c))
	golden(t, "statefulset", StatefulSet(c, 3, "abc123", o))
	golden(t, "pdb", PodDisruptionBudget(c))
	golden(t, "servicemonitor", ServiceMonitor(c, o))
	golden(t, "networkpolicy", NetworkPolicy(c, o))
	tls := sample()
	tls.Spec.TLS = &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "ca", Kind: "ClusterIssuer"}}
	golden(t, "certificate-server", ServerCertificate(tls, o))
	golden(t, "certificate-client", ClientCertificate(tls))
	golden(t, "certificate-operator", OperatorCertificate(tls))
	golden(t, "certificate-client-readonly", ReadOnlyClientCertificate(tls))
	golden(t, "statefulset-tls", StatefulSet(tls, 3, "abc123", o))
	golden(t, "servicemonitor-tls", ServiceMonitor(tls, o))
	def := sample()
	def.Spec.TLS = nil
	golden(t, "issuer-selfsigned", SelfSignedIssuer(def))
	golden(t, "certificate-ca", CACertificate(def))
	golden(t, "issuer-ca", CAIssuer(def))
}

func TestEveryObjectIsOwnedByTheCluster(t *testing.T) {
	g := NewWithT(t)
	c, o := sample(), DefaultOptions()
	c.Spec.TLS = &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "ca"}}
	want := metav1.OwnerReference{APIVersion: "db.rolis.io/v1alpha1", Kind: "RolisCluster", Name: "db", UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	for _, m := range []metav1.ObjectMeta{
		EngineConfigMap(c, 3, o).ObjectMeta, HeadlessService(c).ObjectMeta,
		ClientService(c).ObjectMeta, ReadService(c).ObjectMeta, StatefulSet(c, 3, "h", o).ObjectMeta,
		PodDisruptionBudget(c).ObjectMeta, ServiceMonitor(c, o).ObjectMeta, ServerCertificate(c, o).ObjectMeta,
		ClientCertificate(c).ObjectMeta, FailoverLease(c).ObjectMeta, OperatorCertificate(c).ObjectMeta,
		ReadOnlyClientCertificate(c).ObjectMeta, NetworkPolicy(c, o).ObjectMeta, SelfSignedIssuer(c).ObjectMeta,
		CACertificate(c).ObjectMeta, CAIssuer(c).ObjectMeta,
	} {
		g.Expect(m.OwnerReferences).To(Equal([]metav1.OwnerReference{want}), m.Name)
		g.Expect(m.Namespace).To(Equal("prod"), m.Name)
		g.Expect(m.Labels).To(HaveKeyWithValue(LabelInstance, "db"), m.Name)
		g.Expect(m.Labels).To(HaveKeyWithValue(LabelManagedBy, ManagedBy), m.Name)
	}
}

// The epoch record goes with the volumes: kept (no owner) when they are
// retained on deletion, owned by the cluster when they are deleted with it.
func TestEpochRecordIsOwnedOnlyWhenTheVolumesAreDeletedWithTheCluster(t *testing.T) {
	g := NewWithT(t)
	c := sample()
	g.Expect(EpochConfigMap(c).OwnerReferences).To(BeEmpty(), "default retention: Retain")
	c.Spec.Storage.RetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	g.Expect(EpochConfigMap(c).OwnerReferences).To(BeEmpty(), "whenDeleted Retain, whenScaled Delete")
	c.Spec.Storage.RetentionPolicy.WhenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	g.Expect(EpochConfigMap(c).OwnerReferences).To(Equal([]metav1.OwnerReference{OwnerReference(c)}), "whenDeleted Delete")
	g.Expect(EpochConfigMap(c).Labels).To(HaveKeyWithValue(LabelManagedBy, ManagedBy), "cached by the operator")
}

func TestPeersListEveryMemberWithItsStableDNSName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Peers(sample(), 3, DefaultOptions())).To(Equal(
		"1=db-1.db-peers.prod.svc.cluster.local:7002," +
			"2=db-2.db-peers.prod.svc.cluster.local:7002," +
			"3=db-3.db-peers.prod.svc.cluster.local:7002"))
	g.Expect(Peers(sample(), 1, Options{ClusterDomain: "k8s.example"})).To(Equal("1=db-1.db-peers.prod.svc.k8s.example:7002"))
	g.Expect(MemberIDs(3)).To(Equal([]int32{1, 2, 3}), "ids start at 1: rolisd rejects id 0")
}

func TestConfigHashChangesWithEngineSettingsOnly(t *testing.T) {
	g := NewWithT(t)
	c := sample()
	base := ConfigHash(EngineSettings(c))
	g.Expect(ConfigHash(EngineSettings(c))).To(Equal(base), "stable")

	for name, change := range map[string]func(*dbv1.RolisCluster){
		"workerThreads": func(c *dbv1.RolisCluster) { c.Spec.WorkerThreads = 8 },
		"batchSize":     func(c *dbv1.RolisCluster) { c.Spec.BatchSize = 400 },
		"batchTimeout":  func(c *dbv1.RolisCluster) { c.Spec.BatchTimeout = &metav1.Duration{Duration: 5 * time.Millisecond} },
		"prefaultMemory": func(c *dbv1.RolisCluster) {
			c.Spec.PrefaultMemory = ptr.To(resource.MustParse("1Gi"))
		},
	} {
		d := sample()
		change(d)
		g.Expect(ConfigHash(EngineSettings(d))).NotTo(Equal(base), name)
		g.Expect(StatefulSet(d, 3, ConfigHash(EngineSettings(d)), DefaultOptions()).Spec.Template.Annotations[AnnotationConfigHash]).
			NotTo(Equal(base), name+" must change the pod template, so that pods roll")
	}
	for name, change := range map[string]func(*dbv1.RolisCluster){
		"replicas":  func(c *dbv1.RolisCluster) { c.Spec.Replicas = 5 },
		"resources": func(c *dbv1.RolisCluster) { c.Spec.Resources = corev1.ResourceRequirements{} },
	} {
		d := sample()
		change(d)
		g.Expect(ConfigHash(EngineSettings(d))).To(Equal(base), name+" is not an engine setting")
	}
}

// spec.prefaultMemory reaches rolisd as bytes with huge pages on; unset,
// neither variable is there (the goldens hold the unset pod template, so a
// cluster without the field keeps its pods across an operator upgrade).
func TestPrefaultMemoryPassesBytesAndHugePages(t *testing.T) {
	g := NewWithT(t)
	envOf := func(c *dbv1.RolisCluster) map[string]string {
		env := map[string]string{}
		for _, e := range StatefulSet(c, 3, "h", DefaultOptions()).Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		return env
	}
	c := sample()
	g.Expect(envOf(c)).NotTo(HaveKey(EnvPrefaultMemory))
	g.Expect(envOf(c)).NotTo(HaveKey(EnvHugePages))
	g.Expect(EngineSettings(c)).NotTo(HaveKey(KeyPrefault))

	c.Spec.PrefaultMemory = ptr.To(resource.MustParse("1536Mi"))
	g.Expect(envOf(c)).To(HaveKeyWithValue(EnvPrefaultMemory, "1610612736"))
	g.Expect(envOf(c)).To(HaveKeyWithValue(EnvHugePages, "true"))
	g.Expect(EngineSettings(c)).To(HaveKeyWithValue(KeyPrefault, "1610612736"))
}

func TestMembershipChangesDoNotChangeThePodTemplate(t *testing.T) {
	g := NewWithT(t)
	c, o := sample(), DefaultOptions()
	a, b := StatefulSet(c, 3, "h", o), StatefulSet(c, 5, "h", o)
	g.Expect(equality.Semantic.DeepEqual(a.Spec.Template, b.Spec.Template)).To(BeTrue(),
		"the peer list reaches pods through the ConfigMap, so scaling rolls no pod")
	g.Expect(EngineConfigMap(c, 3, o).Data[KeyPeers]).NotTo(Equal(EngineConfigMap(c, 5, o).Data[KeyPeers]))
}

func TestStatefulSetIsSafeByConstruction(t *testing.T) {
	g := NewWithT(t)
	sts := StatefulSet(sample(), 3, "h", DefaultOptions())
	g.Expect(sts.Spec.UpdateStrategy.Type).To(Equal(appsv1.OnDeleteStatefulSetStrategyType), "the operator orders restarts")
	g.Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.ParallelPodManagement))
	g.Expect(sts.Spec.Ordinals.Start).To(Equal(int32(1)))
	g.Expect(sts.Spec.ServiceName).To(Equal("db-peers"))
	g.Expect(*sts.Spec.PersistentVolumeClaimRetentionPolicy).To(Equal(appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}), "volumes are kept unless the spec says otherwise")

	pod := sts.Spec.Template.Spec
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	g.Expect(*pod.AutomountServiceAccountToken).To(BeFalse())
	ctr := pod.Containers[0]
	g.Expect(*ctr.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(*ctr.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(ctr.SecurityContext.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}))
	g.Expect(ctr.Args).To(ContainElements("--id=$(ROLISD_ID)", "--peers=$(ROLISD_PEERS)",
		"--listen=0.0.0.0:7000", "--admin-listen=0.0.0.0:7001", "--metrics-listen=0.0.0.0:9090", "--accept-stream-port=7003", "--worker-threads=4", "--replication-streams=4"))
	g.Expect(ctr.Env).To(ContainElement(corev1.EnvVar{Name: EnvID, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['apps.kubernetes.io/pod-index']"}}}))
	g.Expect(ctr.Env).To(ContainElements(
		corev1.EnvVar{Name: EnvBatchSize, Value: "200"}, corev1.EnvVar{Name: EnvBatchTimeout, Value: "2ms"}))
	g.Expect(pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(HaveLen(1))
	g.Expect(pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(BeEmpty(),
		"anti-affinity is preferred, so a cluster on fewer nodes still schedules")
	g.Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("2Gi"))
	g.Expect(*sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName).To(Equal("fast"))
}

func TestTLSMountsTheCertificateAndPassesItsFlags(t *testing.T) {
	g := NewWithT(t)
	c := sample()
	c.Spec.TLS = &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "ca"}}
	pod := StatefulSet(c, 3, "h", DefaultOptions()).Spec.Template.Spec
	g.Expect(pod.Containers[0].Args).To(ContainElements(
		"--tls-cert=/etc/rolis/tls/tls.crt", "--tls-key=/etc/rolis/tls/tls.key", "--tls-ca=/etc/rolis/tls/ca.crt"))
	g.Expect(pod.Volumes).To(ContainElement(HaveField("Secret.SecretName", "db-server-tls")))
	g.Expect(pod.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: TLSVolume, MountPath: TLSDir, ReadOnly: true}))

	cert := ServerCertificate(c, DefaultOptions())
	g.Expect(cert.Spec.DNSNames).To(ContainElement("*.db-peers.prod.svc.cluster.local"))
	g.Expect(cert.Spec.IssuerRef.Kind).To(Equal("Issuer"), "kind defaults to Issuer")
	g.Expect(cert.Spec.IssuerRef.Group).To(Equal("cert-manager.io"))

	plain := StatefulSet(sample(), 3, "h", DefaultOptions()).Spec.Template.Spec
	g.Expect(plain.Containers[0].Args).NotTo(ContainElement(HavePrefix("--tls")))
}

func TestPodOverridesApply(t *testing.T) {
	g := NewWithT(t)
	c := sample()
	aff := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	c.Spec.Pod = dbv1.PodOverrides{
		Labels:            map[string]string{"team": "db", LabelInstance: "spoofed"},
		Annotations:       map[string]string{"a": "b"},
		Affinity:          aff,
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		NodeSelector:      map[string]string{"disk": "ssd"},
		PriorityClassName: "high",
	}
	tpl := StatefulSet(c, 3, "h", DefaultOptions()).Spec.Template
	g.Expect(tpl.Labels).To(HaveKeyWithValue("team", "db"))
	g.Expect(tpl.Labels).To(HaveKeyWithValue(LabelInstance, "db"), "the operator's labels win: the selector must keep matching")
	g.Expect(tpl.Annotations).To(HaveKeyWithValue("a", "b"))
	g.Expect(tpl.Annotations).To(HaveKeyWithValue(AnnotationConfigHash, "h"))
	g.Expect(tpl.Spec.Affinity).To(Equal(aff), "an explicit affinity replaces the default anti-affinity")
	g.Expect(tpl.Spec.Tolerations).To(HaveLen(1))
	g.Expect(tpl.Spec.NodeSelector).To(HaveKeyWithValue("disk", "ssd"))
	g.Expect(tpl.Spec.PriorityClassName).To(Equal("high"))
}

func TestServicesSelectTheRightPods(t *testing.T) {
	g := NewWithT(t)
	c := sample()
	g.Expect(ClientService(c).Spec.Selector).To(Equal(map[string]string{LabelName: AppName, LabelInstance: "db", LabelRole: RoleLeader}))
	g.Expect(ReadService(c).Spec.Selector).To(Equal(map[string]string{LabelName: AppName, LabelInstance: "db", LabelServing: ServingTrue}),
		"a fenced member (serving=false) takes no reads")
	h := HeadlessService(c)
	g.Expect(h.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	g.Expect(h.Spec.PublishNotReadyAddresses).To(BeTrue(), "peers must resolve each other before they are ready")
	var names []string
	for _, p := range h.Spec.Ports {
		names = append(names, p.Name)
	}
	g.Expect(names).To(ConsistOf(ClientPortName, AdminPortName, ReplicationPortName, AcceptStreamPortName, MetricsPortName))
}

func TestDisruptionBudgetAllowsOneMemberDownAtATime(t *testing.T) {
	g := NewWithT(t)
	g.Expect(PodDisruptionBudget(sample()).Spec).To(Equal(policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable:             ptr.To(intstr.FromInt32(1)),
		Selector:                   &metav1.LabelSelector{MatchLabels: SelectorLabels(sample())},
		UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
	}))
}

func TestRetentionPolicyFollowsTheSpec(t *testing.T) {
	g := NewWithT(t)
	c := sample()
	c.Spec.Storage.RetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	p := RetentionPolicy(c)
	g.Expect(p.WhenDeleted).To(Equal(appsv1.DeletePersistentVolumeClaimRetentionPolicyType))
	g.Expect(p.WhenScaled).To(Equal(appsv1.RetainPersistentVolumeClaimRetentionPolicyType))
}

func TestDefaultsApplyToAnUndefaultedCluster(t *testing.T) {
	g := NewWithT(t)
	c := &dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "n"}, Spec: dbv1.RolisClusterSpec{Image: "i"}}
	s := EngineSettings(c)
	g.Expect(s).To(Equal(map[string]string{KeyWorkerThreads: "2", KeyBatchSize: "200", KeyBatchTimeout: "1ms", KeyTLS: "true", KeyDurability: "disk"}), "TLS is on by default")
	sts := StatefulSet(c, c.DesiredReplicas(), "h", DefaultOptions())
	g.Expect(*sts.Spec.Replicas).To(Equal(int32(3)))
	g.Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
	g.Expect(sts.Spec.Template.Spec.Containers[0].ImagePullPolicy).To(Equal(corev1.PullIfNotPresent))
	g.Expect(string(ServiceMonitor(c, DefaultOptions()).Spec.Endpoints[0].Interval)).To(Equal("30s"))
}

func TestInvalidSpecComparesPrefaultWithTheMemoryLimit(t *testing.T) {
	g := NewWithT(t)
	c := sample()
	g.Expect(InvalidSpec(c)).To(BeEmpty(), "no prefault")
	c.Spec.PrefaultMemory = ptr.To(resource.MustParse("1Gi"))
	c.Spec.Resources.Limits = nil
	g.Expect(InvalidSpec(c)).To(BeEmpty(), "no limit")
	c.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1536Mi")}
	g.Expect(InvalidSpec(c)).To(BeEmpty(), "below the limit")
	c.Spec.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1024Mi")
	g.Expect(InvalidSpec(c)).To(ContainSubstring("spec.prefaultMemory (1Gi) must be less than resources.limits.memory (1Gi)"))
	// Below the limit but at or above the write watermark (90%): every
	// write that adds data would be refused from the start.
	c.Spec.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1100Mi")
	g.Expect(InvalidSpec(c)).To(ContainSubstring("spec.prefaultMemory (1Gi) must be below 90% of resources.limits.memory (1100Mi)"))
	c.Spec.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1140Mi")
	g.Expect(InvalidSpec(c)).To(BeEmpty(), "just below the watermark")
}

// The operator's idea of the watermark is rolisd's default.
func TestMemoryHighWatermarkIsRolisdsDefault(t *testing.T) {
	src, err := os.ReadFile("../../engine/src/server/config.h")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("uint32_t memory_high_watermark = %d;", MemoryHighWatermarkPercent)
	if !strings.Contains(string(src), want) {
		t.Fatalf("engine/src/server/config.h has no %q", want)
	}
}
