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
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
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

var _ = Describe("TLS", Ordered, func() {
	ctx := context.Background()
	var ns string
	var c *dbv1.RolisCluster
	BeforeAll(func() {
		ns = newNamespace(ctx)
		c = newCluster(ns, "db", 3)
		c.Spec.TLS = &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "rolis-ca", Kind: "ClusterIssuer"}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
	})

	It("without cert-manager, stops before making pods that could never mount their certificates", func() {
		Eventually(condition(ctx, c, ConditionCertificatesReady)).Should(And(
			HavePrefix("False/"+ReasonCertManagerMissing), ContainSubstring("install cert-manager")))
		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(HavePrefix("True/" + ReasonCertManagerMissing))
		Consistently(func() error { return k8s.Get(ctx, byKey(ns, "db"), &appsv1.StatefulSet{}) }, "2s").
			Should(MatchError(ContainSubstring("not found")))
	})

	It("with cert-manager, asks for the member and client certificates and mounts them", func() {
		installCRD("cert-manager.io_certificates.yaml")
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
		client := &cmv1.Certificate{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db-client"), client) }).Should(Succeed())
		Expect(client.Spec.SecretName).To(Equal("db-client-tls"))

		sts := &appsv1.StatefulSet{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db"), sts) }).Should(Succeed())
		Expect(sts.Spec.Template.Spec.Containers[0].Args).To(ContainElements(
			"--tls-cert=/etc/rolis/tls/tls.crt", "--tls-key=/etc/rolis/tls/tls.key", "--tls-ca=/etc/rolis/tls/ca.crt"))
		Expect(sts.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", "db-server-tls")))
		Eventually(condition(ctx, c, ConditionCertificatesReady)).Should(HavePrefix("False/" + ReasonCertificatesIssuing))
	})

	It("once the certificates are issued, elects over mutual TLS with real rolisd members", Label("rolisd"), func() {
		electsOverMutualTLS(ctx, c)
	})
})
