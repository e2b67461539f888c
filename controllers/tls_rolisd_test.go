/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"crypto/x509"
	"net"
	"os"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
	"github.com/rolisdb/rolis/internal/testca"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// issueAsCertManager does what cert-manager does for the cluster's
// Certificates (member, operator, client): it issues them from ca with the
// names and usages they ask for, writes their Secrets (tls.crt, tls.key,
// ca.crt) and marks them Ready. It returns the member certificate's files,
// which the pods mount.
func issueAsCertManager(ctx context.Context, c *dbv1.RolisCluster, ca *testca.CA) testca.Pair {
	GinkgoHelper()
	var member testca.Pair
	for _, want := range specs.Certificates(c, specs.DefaultOptions()) {
		cert := &cmv1.Certificate{}
		Eventually(func() error { return k8s.Get(ctx, byKey(c.Namespace, want.Name), cert) }, "60s").Should(Succeed())
		var crt, key []byte
		if cert.Name == specs.ServerCertificateName(c) {
			var ips []net.IP
			for _, ip := range cert.Spec.IPAddresses {
				ips = append(ips, net.ParseIP(ip))
			}
			member = ca.Issue(GinkgoTB(), testca.Spec{Name: cert.Name, DNSNames: cert.Spec.DNSNames, IPs: ips, URIs: cert.Spec.URIs,
				Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
			crt, key = readPair(member)
		} else {
			crt, key = ca.IssuePEM(GinkgoTB(), testca.Spec{Name: cert.Spec.CommonName, URIs: cert.Spec.URIs,
				Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		}
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: cert.Spec.SecretName},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key, "ca.crt": ca.PEM},
		})).To(Succeed())
		cert.Status.Conditions = []cmv1.CertificateCondition{{Type: cmv1.CertificateConditionReady, Status: cmmeta.ConditionTrue,
			Reason: "Issued", Message: "issued by the test", LastTransitionTime: ptr.To(metav1.Now())}}
		Expect(k8s.Status().Update(ctx, cert)).To(Succeed())
	}
	return member
}

func readPair(p testca.Pair) (crt, key []byte) {
	GinkgoHelper()
	crt, err := os.ReadFile(p.CertFile)
	Expect(err).NotTo(HaveOccurred())
	key, err = os.ReadFile(p.KeyFile)
	Expect(err).NotTo(HaveOccurred())
	return crt, key
}

// electsOverMutualTLS starts c's three members as its StatefulSet would with
// spec.tls (--tls-cert, --tls-key, --tls-ca: mutual TLS on every port) and
// checks that the operator, with the operator certificate from the
// cluster's Secret, elects a leader that serves a client holding a certificate of the
// cluster's CA, while a plaintext caller is refused.
func electsOverMutualTLS(ctx context.Context, c *dbv1.RolisCluster) {
	GinkgoHelper()
	bin := rolisdBinary()
	if bin == "" {
		Skip("no rolisd binary (set ROLISD, or run `make engine` to build bin/rolisd); controllers/tls_test.go checks the client certificate against a gRPC server")
	}
	// Run alone (a label filter), the specs before it in its block did not
	// install cert-manager's API; installing it again changes nothing.
	installCertManager()
	Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
		c.Annotations = map[string]string{"test": "certificates"}
	})).To(Succeed())
	ca := testca.New(GinkgoTB(), "cluster")
	member := issueAsCertManager(ctx, c, ca)
	Eventually(condition(ctx, c, ConditionCertificatesReady), "60s").Should(HavePrefix("True/" + ReasonCertificatesIssued))

	procs := testserver.Start(GinkgoTB(), testserver.Options{
		Members: 3, Binary: bin, ProbeTLS: ca.ClientConfig(GinkgoTB()),
		Args: memberArgs("--tls-cert="+member.CertFile, "--tls-key="+member.KeyFile, "--tls-ca="+ca.CAFile),
	})
	startPods(ctx, c, []int32{1, 2, 3}, "rev1", func(id int32) string { return procs.Member(int(id)).AdminAddr })
	id, epoch := servingLeader(ctx, c)
	Expect(epoch).To(BeNumerically(">=", 1))
	Eventually(podRoles(ctx, c)).Should(Equal(rolesWith(c, id)))

	By("a client with a certificate of the cluster's CA writes through the leader; a plaintext caller is refused")
	cli := ca.Issue(GinkgoTB(), testca.Spec{Name: "app", URIs: []string{specs.IdentityURI(c, "client", "app")}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := client.New(wctx, client.Config{Endpoints: procs.ClientAddrs(), CAFile: ca.CAFile, CertFile: cli.CertFile, KeyFile: cli.KeyFile})
	Expect(err).NotTo(HaveOccurred())
	defer cl.Close() //nolint:errcheck
	Expect(cl.Put(wctx, []byte("over-tls"), []byte("yes"))).To(Succeed())
	v, found, err := cl.Get(wctx, []byte("over-tls"))
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue())
	Expect(string(v)).To(Equal("yes"))
	_, err = memberStatus(procs.Member(int(id)).AdminAddr) // plaintext
	Expect(err).To(HaveOccurred(), "the admin port takes only TLS")
}
