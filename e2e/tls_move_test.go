package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/pkg/client"
)

// The move of a running plaintext cluster to mutual TLS (docs/operations.md,
// "Turning TLS on or off for a running cluster") on a real cluster: the
// certificates from cert-manager, two rollouts through the kubelet's own
// readiness probes, writes going on, and the ServiceMonitor's scheme
// following the mode so that Prometheus keeps every member.
var _ = Describe("Moving a running cluster to TLS", Label("tls-move"), func() {
	It("turns TLS on under load in two rollouts, the scrape following, and loses no acknowledged write", func() {
		d := createSample("e2e-tls-move")
		must(30*time.Second, "-n", d.ns, "patch", "roliscluster", d.name, "--type=merge",
			"-p", `{"spec":{"monitoring":{"enabled":true,"interval":"10s"}}}`)
		d.startLoad(17)
		d.writesFlowing(30 * time.Second)
		epoch := d.cluster().Status.Epoch

		By("spec.tls.enabled: true")
		start := time.Now()
		must(30*time.Second, "-n", d.ns, "patch", "roliscluster", d.name, "--type=merge",
			"-p", `{"spec":{"tls":{"enabled":true}}}`)
		// Every mode the operator records on the way, with the scheme the
		// ServiceMonitor had then: HTTP while members not yet rolled speak
		// plaintext only, HTTPS from the second rollout on.
		seen := map[string]string{}
		var order []string
		Eventually(func(g Gomega) {
			c := d.cluster()
			mode := c.Annotations[dbv1.AnnotationTLSMode]
			scheme, err := kubectl(20*time.Second, "-n", d.ns, "get", "servicemonitor", d.name,
				"-o", "jsonpath={.spec.endpoints[0].scheme}")
			g.Expect(err).NotTo(HaveOccurred())
			if _, ok := seen[mode]; !ok {
				order = append(order, mode)
				GinkgoWriter.Printf("%v: mode %q, ServiceMonitor scheme %q\n", time.Since(start).Round(time.Second), mode, scheme)
			}
			seen[mode] = scheme
			g.Expect(mode).To(Equal(dbv1.TLSModeMutual))
			g.Expect(isReady(c)).To(BeTrue(), describe(c))
		}).WithTimeout(15 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		GinkgoWriter.Printf("moved to mutual TLS in %v, modes %v\n", time.Since(start).Round(time.Second), order)
		Expect(order).To(ContainElements(dbv1.TLSModeToMutualAcceptPlaintext, dbv1.TLSModeToMutualRequireTLS, dbv1.TLSModeMutual))
		Expect(seen[dbv1.TLSModeToMutualAcceptPlaintext]).To(BeEmpty(), "HTTP (the default scheme) during the first rollout")
		Expect(strings.ToLower(seen[dbv1.TLSModeMutual])).To(Equal("https"))
		Expect(d.cluster().Status.Epoch).To(BeNumerically(">", epoch), "the leader was switched over to be restarted")

		By("TLS clients are served, plaintext ones refused")
		files := secretFiles(d.ns, d.name+"-client-tls", GinkgoT().TempDir())
		d.tlsFiles = client.Config{CAFile: files["ca.crt"], CertFile: files["tls.crt"], KeyFile: files["tls.key"]}
		leader := d.cluster().Status.Leader
		_, err := d.status(leader)
		Expect(err).NotTo(HaveOccurred(), "status over TLS")
		plain := *d
		plain.tlsFiles = client.Config{}
		_, err = plain.status(leader)
		Expect(err).To(HaveOccurred(), "status in plaintext")

		By("Prometheus scrapes every member over HTTPS")
		Eventually(func(g Gomega) {
			targets, err := promTargets()
			g.Expect(err).NotTo(HaveOccurred())
			up := 0
			for _, t := range targets {
				if t.Labels["namespace"] != d.ns {
					continue
				}
				g.Expect(t.ScrapeURL).To(HavePrefix("https://"), t.Labels["pod"])
				g.Expect(t.Health).To(Equal("up"), fmt.Sprintf("%s: %s", t.Labels["pod"], t.LastError))
				up++
			}
			g.Expect(up).To(Equal(len(d.pods)))
		}).WithTimeout(3 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())

		By("no acknowledged write lost across both rollouts (read over TLS)")
		d.verify()
	})
})
