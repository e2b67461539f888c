/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"path/filepath"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
	"github.com/rolisdb/rolis/internal/testca"
)

// installCRD installs a third-party CRD (generated from its Go module by
// `make manifests` into config/crd/external) into the running API server.
func installCRD(file string) {
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join("..", "config", "crd", "external", file)},
		ErrorIfPathMissing: true,
	})
	Expect(err).NotTo(HaveOccurred())
}

// Ordered: each block first runs without the third-party API, then installs
// it; the API server keeps it for the rest of the suite.
var _ = Describe("Monitoring", Ordered, func() {
	ctx := context.Background()
	var ns string
	var c *dbv1.RolisCluster
	BeforeAll(func() {
		ns = newNamespace(ctx)
		c = newCluster(ns, "db", 1)
		c.Spec.Monitoring.Enabled = true
		Expect(k8s.Create(ctx, c)).To(Succeed())
	})

	It("without the ServiceMonitor CRD, says why in a condition and still runs the database", func() {
		Eventually(condition(ctx, c, ConditionMonitoringReady)).Should(And(
			HavePrefix("False/"+ReasonServiceMonitorCRDMissing),
			ContainSubstring("install the prometheus-operator CRDs")))
		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(HavePrefix("True/" + ReasonServiceMonitorCRDMissing))
		sts := &appsv1.StatefulSet{}
		Expect(k8s.Get(ctx, byKey(ns, "db"), sts)).To(Succeed(), "monitoring does not block the database")
	})

	It("with the CRD installed, creates the ServiceMonitor on the metrics port", func() {
		installCRD("monitoring.coreos.com_servicemonitors.yaml")
		sm := &monv1.ServiceMonitor{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db"), sm) }, "60s").Should(Succeed())
		Expect(sm.Spec.Endpoints).To(HaveLen(1))
		Expect(sm.Spec.Endpoints[0].Port).To(Equal(specs.MetricsPortName))
		Expect(sm.Spec.Selector.MatchLabels).To(HaveKeyWithValue(specs.LabelService, specs.ServicePeers))
		Expect(sm.OwnerReferences).To(HaveLen(1))
		Eventually(condition(ctx, c, ConditionMonitoringReady)).Should(HavePrefix("True/"))
		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(HavePrefix("False/"))
	})

	It("removes the ServiceMonitor when monitoring is turned off", func() {
		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
			c.Spec.Monitoring.Enabled = false
		})).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db"), &monv1.ServiceMonitor{}) }).Should(MatchError(ContainSubstring("not found")))
		Eventually(condition(ctx, c, ConditionMonitoringReady)).Should(Equal("absent"))
	})
})

// installCertManager installs the cert-manager APIs the operator uses.
func installCertManager() {
	installCRD("cert-manager.io_certificates.yaml")
	installCRD("cert-manager.io_issuers.yaml")
}

func recordedTLSMode(ctx context.Context, c *dbv1.RolisCluster) func() string {
	return func() string { return getCluster(ctx, c).Annotations[dbv1.AnnotationTLSMode] }
}

func podArgs(ctx context.Context, c *dbv1.RolisCluster) func() []string {
	return func() []string {
		sts := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, byKey(c.Namespace, c.Name), sts); err != nil {
			return []string{err.Error()}
		}
		return sts.Spec.Template.Spec.Containers[0].Args
	}
}

// Ordered: the first spec runs without cert-manager's API, then installs
// it; the API server keeps it for the rest of the suite. The cluster of
// the default (d) is made without it and the one of spec.tls (c) with an
// explicit issuer.
var _ = Describe("TLS", Ordered, func() {
	ctx := context.Background()
	var ns string
	var c, d *dbv1.RolisCluster
	BeforeAll(func() {
		ns = newNamespace(ctx)
		c = newCluster(ns, "db", 3)
		c.Spec.TLS = &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "rolis-ca", Kind: "ClusterIssuer"}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		d = newCluster(ns, "plain", 1)
		d.Spec.TLS = nil // the default
		Expect(k8s.Create(ctx, d)).To(Succeed())
	})

	It("without cert-manager, stops before making pods that could never mount their certificates", func() {
		Eventually(condition(ctx, c, ConditionCertificatesReady)).Should(And(
			HavePrefix("False/"+ReasonCertManagerMissing), ContainSubstring("install cert-manager")))
		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(HavePrefix("True/" + ReasonCertManagerMissing))
		Consistently(func() error { return k8s.Get(ctx, byKey(ns, "db"), &appsv1.StatefulSet{}) }, "2s").
			Should(MatchError(ContainSubstring("not found")))
	})

	It("without cert-manager, runs a cluster that leaves TLS to the default in plaintext and says so", func() {
		Eventually(recordedTLSMode(ctx, d)).Should(Equal(dbv1.TLSModePlaintext))
		Eventually(condition(ctx, d, ConditionTLSDisabled)).Should(And(
			HavePrefix("True/"+ReasonTLSNoCertManager), ContainSubstring("plaintext")))
		Eventually(podArgs(ctx, d)).Should(ContainElement(HavePrefix("--id=")))
		Expect(podArgs(ctx, d)()).NotTo(ContainElement(HavePrefix("--tls")))
		Eventually(eventReasons(ctx, d)).Should(ContainElement(ReasonTLSModeChosen))
		Expect(eventNotes(ctx, d, ReasonTLSModeChosen)).To(ContainElement(ContainSubstring("members speak plaintext")))
		Expect(condition(ctx, d, dbv1.ConditionDegraded)()).NotTo(HavePrefix("True/"), "plaintext by the default is a warning, not a fault")
	})

	It("with cert-manager, asks for the member, operator and client certificates and mounts them", func() {
		installCertManager()
		// The reconcile stopped with a one-minute retry; any change of the
		// cluster brings it back sooner.
		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
			c.Annotations = map[string]string{"test": "wake-up"}
		})).To(Succeed())

		server := &cmv1.Certificate{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db-server"), server) }, "60s").Should(Succeed())
		Expect(server.Spec.IssuerRef.Name).To(Equal("rolis-ca"))
		Expect(server.Spec.IssuerRef.Kind).To(Equal("ClusterIssuer"))
		Expect(server.Spec.SecretName).To(Equal("db-server-tls"))
		Expect(server.Spec.DNSNames).To(ContainElement("*.db-peers." + ns + ".svc.cluster.local"))
		Expect(server.Spec.URIs).To(ConsistOf("spiffe://rolis." + ns + ".db/member"))
		client := &cmv1.Certificate{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db-client"), client) }).Should(Succeed())
		Expect(client.Spec.SecretName).To(Equal("db-client-tls"))
		Expect(client.Spec.URIs).To(ConsistOf("spiffe://rolis." + ns + ".db/client/db-client"))
		operator := &cmv1.Certificate{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db-operator"), operator) }).Should(Succeed())
		Expect(operator.Spec.SecretName).To(Equal("db-operator-tls"))
		Expect(operator.Spec.URIs).To(ConsistOf("spiffe://rolis." + ns + ".db/operator"))
		Expect(k8s.Get(ctx, byKey(ns, "db-ca"), &cmv1.Issuer{})).To(MatchError(ContainSubstring("not found")),
			"an issuer is given: no CA of the cluster's own")
		Eventually(recordedTLSMode(ctx, c)).Should(Equal(dbv1.TLSModeMutual), "recorded again: the test replaced the annotations")

		sts := &appsv1.StatefulSet{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db"), sts) }).Should(Succeed())
		Expect(sts.Spec.Template.Spec.Containers[0].Args).To(ContainElements(
			"--tls-cert=/etc/rolis/tls/tls.crt", "--tls-key=/etc/rolis/tls/tls.key", "--tls-ca=/etc/rolis/tls/ca.crt",
			"--tls-trust-domain=rolis."+ns+".db"))
		Expect(sts.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS))
		Expect(sts.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", "db-server-tls")))
		Eventually(condition(ctx, c, ConditionCertificatesReady)).Should(HavePrefix("False/" + ReasonCertificatesIssuing))
		Expect(condition(ctx, c, ConditionTLSDisabled)()).To(Equal("absent"))
	})

	It("moves the plaintext members of a cluster made without cert-manager to mutual TLS once asked: certificates first, then two rollouts", func() {
		fc := newFakeCluster(1, false)
		defer fc.stop()
		startPods(ctx, d, []int32{1}, "rev1", func(int32) string { return fc.members[1].addr() })
		setRevisionOf(ctx, d, "rev1")
		Expect(recordedTLSMode(ctx, d)()).To(Equal(dbv1.TLSModePlaintext))
		Expect(updateCluster(ctx, d, func(c *dbv1.RolisCluster) { c.Spec.TLS = &dbv1.TLSSpec{Enabled: ptr.To(true)} })).To(Succeed())

		By("the certificates are asked for while the members keep plaintext")
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "plain-server"), &cmv1.Certificate{}) }, "60s").Should(Succeed())
		Eventually(condition(ctx, d, dbv1.ConditionProgressing)).Should(HavePrefix("True/" + ReasonTLSTransitionIssuing))
		Consistently(podArgs(ctx, d), "2s").ShouldNot(ContainElement(HavePrefix("--tls")))
		Expect(recordedTLSMode(ctx, d)()).To(Equal(dbv1.TLSModePlaintext))
		Expect(condition(ctx, d, ConditionTLSDisabled)()).To(HavePrefix("True/"))
		Expect(condition(ctx, d, dbv1.ConditionDegraded)()).NotTo(ContainSubstring(ReasonTLSChangeRefused))

		By("once they are Ready, the members roll to take TLS and plaintext")
		issueAsCertManager(ctx, d, testca.New(GinkgoTB(), "plain"))
		Eventually(podArgs(ctx, d)).Should(ContainElements("--tls-ca=/etc/rolis/tls/ca.crt", specs.FlagTLSAcceptPlaintext))
		Expect(recordedTLSMode(ctx, d)()).To(Equal(dbv1.TLSModeToMutualAcceptPlaintext))
		Eventually(eventReasons(ctx, d)).Should(ContainElement(ReasonTLSTransitionAcceptPlaintext))
		Eventually(condition(ctx, d, dbv1.ConditionProgressing)).Should(HavePrefix("True/" + ReasonTLSTransitionAcceptPlaintext))
		Consistently(recordedTLSMode(ctx, d), "2s").Should(Equal(dbv1.TLSModeToMutualAcceptPlaintext),
			"the member still runs the old revision")

		By("once the member runs that revision and is Ready, they roll again to require TLS")
		restartAt := func(rev string) {
			setRevisionOf(ctx, d, rev)
			p := &corev1.Pod{}
			if err := k8s.Get(ctx, byKey(ns, specs.PodName(d, 1)), p); err == nil {
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, p))).To(Succeed())
			}
			Eventually(func() error { return k8s.Get(ctx, byKey(ns, specs.PodName(d, 1)), &corev1.Pod{}) }).
				Should(MatchError(ContainSubstring("not found")))
			startPods(ctx, d, []int32{1}, rev, func(int32) string { return fc.members[1].addr() })
		}
		restartAt("rev2")
		Eventually(recordedTLSMode(ctx, d), "30s").Should(Equal(dbv1.TLSModeToMutualRequireTLS))
		Eventually(podArgs(ctx, d)).ShouldNot(ContainElement(specs.FlagTLSAcceptPlaintext))
		Expect(podArgs(ctx, d)()).To(ContainElement("--tls-ca=/etc/rolis/tls/ca.crt"))
		Eventually(eventReasons(ctx, d)).Should(ContainElement(ReasonTLSTransitionRequireTLS))

		By("once the member requires TLS, the mode is recorded mutual")
		restartAt("rev3")
		Eventually(recordedTLSMode(ctx, d), "30s").Should(Equal(dbv1.TLSModeMutual))
		Eventually(condition(ctx, d, ConditionTLSDisabled)).Should(Equal("absent"))
		Expect(eventNotes(ctx, d, ReasonTLSModeChosen)).To(ContainElement(ContainSubstring("members speak mutual")))

		By("turning TLS off again is refused by the API server: the members keep mutual TLS")
		err := updateCluster(ctx, d, func(c *dbv1.RolisCluster) { c.Spec.TLS = &dbv1.TLSSpec{Enabled: ptr.To(false)} })
		Expect(err).To(MatchError(ContainSubstring("tls.enabled cannot be turned off after creation")))
		Consistently(podArgs(ctx, d), "2s").Should(ContainElement("--tls-ca=/etc/rolis/tls/ca.crt"))
	})

	It("gives a new cluster without spec.tls its own CA and mutual TLS", func() {
		e := newCluster(ns, "auto", 3)
		e.Spec.TLS = nil
		Expect(k8s.Create(ctx, e)).To(Succeed())
		Eventually(recordedTLSMode(ctx, e)).Should(Equal(dbv1.TLSModeMutual))

		self, caIssuer, ca := &cmv1.Issuer{}, &cmv1.Issuer{}, &cmv1.Certificate{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "auto-selfsigned"), self) }).Should(Succeed())
		Expect(self.Spec.SelfSigned).NotTo(BeNil())
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "auto-ca"), ca) }).Should(Succeed())
		Expect(ca.Spec.IsCA).To(BeTrue())
		Expect(ca.Spec.IssuerRef.Name).To(Equal("auto-selfsigned"))
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "auto-ca"), caIssuer) }).Should(Succeed())
		Expect(caIssuer.Spec.CA.SecretName).To(Equal(ca.Spec.SecretName))
		for name, uri := range map[string]string{
			"auto-server":   "spiffe://rolis." + ns + ".auto/member",
			"auto-operator": "spiffe://rolis." + ns + ".auto/operator",
			"auto-client":   "spiffe://rolis." + ns + ".auto/client/auto-client",
		} {
			cert := &cmv1.Certificate{}
			Eventually(func() error { return k8s.Get(ctx, byKey(ns, name), cert) }).Should(Succeed())
			Expect(cert.Spec.URIs).To(ConsistOf(uri))
			Expect(cert.Spec.IssuerRef.Name).To(Equal("auto-ca"))
			Expect(cert.OwnerReferences).To(ContainElement(HaveField("UID", getCluster(ctx, e).UID)))
		}
		Eventually(podArgs(ctx, e)).Should(ContainElement("--tls-trust-domain=rolis." + ns + ".auto"))
		Expect(condition(ctx, e, ConditionTLSDisabled)()).To(Equal("absent"))
		Expect(k8s.Get(ctx, byKey(ns, "auto-client-readonly"), &cmv1.Certificate{})).To(MatchError(ContainSubstring("not found")))

		By("spec.tls.readOnlyClient adds the read-only client certificate")
		Expect(updateCluster(ctx, e, func(c *dbv1.RolisCluster) { c.Spec.TLS = &dbv1.TLSSpec{ReadOnlyClient: true} })).To(Succeed())
		ro := &cmv1.Certificate{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "auto-client-readonly"), ro) }).Should(Succeed())
		Expect(ro.Spec.URIs).To(ConsistOf("spiffe://rolis." + ns + ".auto/client-readonly/auto-client-readonly"))
		Expect(ro.Spec.SecretName).To(Equal("auto-client-readonly-tls"))
		By("turned off, the read-only certificate is removed")
		Expect(updateCluster(ctx, e, func(c *dbv1.RolisCluster) { c.Spec.TLS = nil })).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "auto-client-readonly"), ro) }).Should(MatchError(ContainSubstring("not found")))
		Expect(k8s.Get(ctx, byKey(ns, "auto-client"), &cmv1.Certificate{})).To(Succeed())
	})

	It("keeps the plaintext members of a cluster made by an older operator until TLS is asked for, then moves them: certificates first", func() {
		// The older operator's StatefulSet: plaintext members, no mode recorded.
		old := newCluster(ns, "legacy", 3)
		old.Spec.TLS = nil
		old.Annotations = map[string]string{dbv1.AnnotationTLSMode: dbv1.TLSModePlaintext}
		sts := specs.StatefulSet(old, 3, "old", specs.DefaultOptions())
		sts.OwnerReferences = nil
		Expect(k8s.Create(ctx, sts)).To(Succeed())
		old.Annotations = nil
		Expect(k8s.Create(ctx, old)).To(Succeed())

		Eventually(recordedTLSMode(ctx, old)).Should(Equal(dbv1.TLSModePlaintext))
		Eventually(condition(ctx, old, ConditionTLSDisabled)).Should(HavePrefix("True/" + ReasonTLSCreatedWithout))
		Expect(condition(ctx, old, ConditionTLSDisabled)()).To(ContainSubstring("set spec.tls.enabled: true"))
		// TLS is the default and cert-manager is installed, but the user
		// did not ask: no rolling change starts on its own.
		Consistently(func() error { return k8s.Get(ctx, byKey(ns, "legacy-server"), &cmv1.Certificate{}) }, "3s").
			Should(MatchError(ContainSubstring("not found")))
		Expect(condition(ctx, old, dbv1.ConditionProgressing)()).NotTo(ContainSubstring(ReasonTLSTransitionIssuing))

		// Asked for, the move starts with the certificates; the members keep
		// plaintext until they are Ready (cert-manager does not run here).
		Expect(updateCluster(ctx, old, func(c *dbv1.RolisCluster) { c.Spec.TLS = &dbv1.TLSSpec{Enabled: ptr.To(true)} })).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "legacy-server"), &cmv1.Certificate{}) }).Should(Succeed())
		Eventually(condition(ctx, old, dbv1.ConditionProgressing)).Should(HavePrefix("True/" + ReasonTLSTransitionIssuing))
		Consistently(podArgs(ctx, old), "2s").ShouldNot(ContainElement(HavePrefix("--tls")))
		Expect(condition(ctx, old, dbv1.ConditionDegraded)()).NotTo(ContainSubstring(ReasonTLSChangeRefused))
	})

	It("runs a cluster that opts out in plaintext, with a warning condition and event", func() {
		f := newCluster(ns, "optout", 1) // spec.tls.enabled: false
		Expect(k8s.Create(ctx, f)).To(Succeed())
		Eventually(condition(ctx, f, ConditionTLSDisabled)).Should(And(
			HavePrefix("True/"+ReasonTLSDisabledBySpec), ContainSubstring("spec.tls.enabled is false")))
		Eventually(eventReasons(ctx, f)).Should(ContainElement(ReasonTLSModeChosen))
		Eventually(podArgs(ctx, f)).Should(ContainElement(HavePrefix("--id=")))
		Expect(podArgs(ctx, f)()).NotTo(ContainElement(HavePrefix("--tls")))
		Expect(k8s.Get(ctx, byKey(ns, "optout-server"), &cmv1.Certificate{})).To(MatchError(ContainSubstring("not found")))
		Expect(k8s.Get(ctx, byKey(ns, "optout-ca"), &cmv1.Issuer{})).To(MatchError(ContainSubstring("not found")))
	})

	It("once the certificates are issued, elects over mutual TLS with real rolisd members", Label("rolisd"), func() {
		electsOverMutualTLS(ctx, c)
	})

	It("turns TLS on for a running plaintext cluster of real rolisd members under load, losing no acknowledged write", Label("rolisd"), func() {
		movesToTLSUnderLoad(ctx)
	})
})
