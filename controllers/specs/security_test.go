/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

func TestCertificatesCarryTheIdentityOfTheirKind(t *testing.T) {
	g := NewWithT(t)
	c, o := sample(), DefaultOptions()
	c.Spec.TLS = nil // the default: TLS from the cluster's own CA
	certs := Certificates(c, o)
	g.Expect(certs).To(HaveLen(3), "member, operator, client; client-readonly only when asked for")
	byName := map[string]*cmv1.Certificate{}
	for _, cert := range certs {
		byName[cert.Name] = cert
		g.Expect(cert.Spec.IssuerRef.Name).To(Equal("db-ca"), "issued by the cluster's own CA Issuer")
		g.Expect(cert.Spec.IssuerRef.Kind).To(Equal("Issuer"))
		g.Expect(cert.Spec.URIs).To(HaveLen(1), "exactly one identity per certificate")
	}
	g.Expect(byName["db-server"].Spec.URIs).To(ConsistOf("spiffe://rolis.prod.db/member"))
	g.Expect(byName["db-server"].Spec.Usages).To(ContainElements(cmv1.UsageServerAuth, cmv1.UsageClientAuth))
	g.Expect(byName["db-server"].Spec.DNSNames).To(ContainElement("*.db-peers.prod.svc.cluster.local"))
	g.Expect(byName["db-operator"].Spec.URIs).To(ConsistOf("spiffe://rolis.prod.db/operator"))
	g.Expect(byName["db-operator"].Spec.SecretName).To(Equal("db-operator-tls"))
	g.Expect(byName["db-client"].Spec.URIs).To(ConsistOf("spiffe://rolis.prod.db/client/db-client"))
	for _, n := range []string{"db-operator", "db-client"} {
		g.Expect(byName[n].Spec.Usages).To(ContainElement(cmv1.UsageClientAuth))
		g.Expect(byName[n].Spec.Usages).NotTo(ContainElement(cmv1.UsageServerAuth), n+" is a client only")
	}

	c.Spec.TLS = &dbv1.TLSSpec{ReadOnlyClient: true, IssuerRef: &dbv1.IssuerReference{Name: "corp", Kind: "ClusterIssuer"}}
	certs = Certificates(c, o)
	g.Expect(certs).To(HaveLen(4))
	ro := certs[3]
	g.Expect(ro.Spec.URIs).To(ConsistOf("spiffe://rolis.prod.db/client-readonly/db-client-readonly"))
	g.Expect(ro.Spec.SecretName).To(Equal("db-client-readonly-tls"))
	g.Expect(ro.Spec.IssuerRef.Name).To(Equal("corp"), "a given issuer signs every kind")

	// The trust domain is lower case, whatever the names' case.
	g.Expect(TrustDomain(&dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Name: "DB", Namespace: "Ns"}})).To(Equal("rolis.ns.db"))
}

func TestTheDefaultCAChainIsSelfSignedThenCA(t *testing.T) {
	g := NewWithT(t)
	c := sample()
	self, ca, issuer := SelfSignedIssuer(c), CACertificate(c), CAIssuer(c)
	g.Expect(self.Spec.SelfSigned).NotTo(BeNil())
	g.Expect(ca.Spec.IsCA).To(BeTrue())
	g.Expect(ca.Spec.IssuerRef.Name).To(Equal(self.Name))
	g.Expect(ca.Spec.PrivateKey.RotationPolicy).To(Equal(cmv1.RotationPolicyNever), "renewing the CA keeps the key its certificates chain to")
	g.Expect(issuer.Spec.CA.SecretName).To(Equal(ca.Spec.SecretName))
	g.Expect(issuer.Name).To(Equal(ServerCertificate(c, DefaultOptions()).Spec.IssuerRef.Name))
}

func TestTLSMembersGetTheTrustDomainAndHTTPSProbes(t *testing.T) {
	g := NewWithT(t)
	c := sample()
	c.Spec.TLS = nil
	ctr := StatefulSet(c, 3, "h", DefaultOptions()).Spec.Template.Spec.Containers[0]
	g.Expect(ctr.Args).To(ContainElement("--tls-trust-domain=rolis.prod.db"))
	for _, p := range []*corev1.Probe{ctr.StartupProbe, ctr.LivenessProbe, ctr.ReadinessProbe} {
		g.Expect(p.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS))
	}
	ep := ServiceMonitor(c, DefaultOptions()).Spec.Endpoints[0]
	g.Expect(string(*ep.Scheme)).To(Equal("HTTPS"))
	g.Expect(ep.TLSConfig.CA.Secret.Name).To(Equal("db-server-tls"))

	// The recorded mode wins over the spec's default.
	c.Annotations = map[string]string{dbv1.AnnotationTLSMode: dbv1.TLSModePlaintext}
	ctr = StatefulSet(c, 3, "h", DefaultOptions()).Spec.Template.Spec.Containers[0]
	g.Expect(ctr.Args).NotTo(ContainElement(HavePrefix("--tls")))
	g.Expect(ctr.LivenessProbe.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTP))
	g.Expect(ServiceMonitor(c, DefaultOptions()).Spec.Endpoints[0].Scheme).To(BeNil())
}

// Moving a running cluster to TLS: HTTP while members not yet rolled speak
// plaintext only, HTTPS once every member takes TLS.
func TestTheScrapeFollowsAMoveToTLS(t *testing.T) {
	g := NewWithT(t)
	c := sample()
	for mode, https := range map[string]bool{
		dbv1.TLSModeToMutualAcceptPlaintext: false,
		dbv1.TLSModeToMutualRequireTLS:      true,
		dbv1.TLSModeMutual:                  true,
	} {
		c.Annotations = map[string]string{dbv1.AnnotationTLSMode: mode}
		ep := ServiceMonitor(c, DefaultOptions()).Spec.Endpoints[0]
		g.Expect(ep.Scheme != nil).To(Equal(https), mode)
		g.Expect(ep.TLSConfig != nil).To(Equal(https), mode)
	}
}

func ruleFor(np *networkingv1.NetworkPolicy, port int32) networkingv1.NetworkPolicyIngressRule {
	for _, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			if p.Port.IntVal == port {
				return r
			}
		}
	}
	return networkingv1.NetworkPolicyIngressRule{Ports: nil, From: []networkingv1.NetworkPolicyPeer{{}}}
}

func TestTheNetworkPolicyAdmitsEachPortFromItsPeersOnly(t *testing.T) {
	g := NewWithT(t)
	c := sample()
	o := Options{ClusterDomain: "cluster.local", OperatorNamespace: "rolis-system"}
	np := NetworkPolicy(c, o)
	g.Expect(np.Spec.PodSelector.MatchLabels).To(Equal(SelectorLabels(c)))
	g.Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress))
	members := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels(c)}}}
	g.Expect(ruleFor(np, ReplicationPort).From).To(Equal(members))
	g.Expect(ruleFor(np, AcceptStreamPort).From).To(Equal(members))
	g.Expect(ruleFor(np, AdminPort).From).To(Equal([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"kubernetes.io/metadata.name": "rolis-system"}}}}))
	g.Expect(ruleFor(np, ClientPort).From).To(BeEmpty(), "no clientSelector: any pod")
	g.Expect(ruleFor(np, MetricsPort).From).To(BeEmpty(), "no monitoring.namespaceSelector: any namespace")
	for _, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			g.Expect(*p.Protocol).To(Equal(corev1.ProtocolTCP))
		}
	}

	c.Spec.ClientSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"rolis-client": "true"}}
	c.Spec.Monitoring.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"monitoring": "yes"}}
	np = NetworkPolicy(c, o)
	g.Expect(ruleFor(np, ClientPort).From).To(Equal([]networkingv1.NetworkPolicyPeer{{PodSelector: c.Spec.ClientSelector}}))
	g.Expect(ruleFor(np, MetricsPort).From).To(Equal([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: c.Spec.Monitoring.NamespaceSelector}}))
	g.Expect(ruleFor(np, ReplicationPort).From).To(Equal(members), "the client selector does not open the replication port")

	// An operator that does not know its namespace (outside the cluster)
	// cannot be named: the admin port is then open to any pod.
	g.Expect(ruleFor(NetworkPolicy(c, DefaultOptions()), AdminPort).From).To(BeEmpty())
	g.Expect(c.NetworkPolicyEnabled()).To(BeTrue(), "on by default")
	c.Spec.NetworkPolicy.Enabled = ptr.To(false)
	g.Expect(c.NetworkPolicyEnabled()).To(BeFalse())
}
