package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Observability and tests of the chart", func() {
	It("Prometheus scrapes every member through the cluster's ServiceMonitor and the commit counter moves under load", Label("monitoring"), func() {
		d := createSample("e2e-metrics")
		// The cluster's ServiceMonitor, which the operator-managed
		// Prometheus of the add-on reads.
		must(30*time.Second, "-n", d.ns, "patch", "roliscluster", d.name, "--type=merge",
			"-p", `{"spec":{"monitoring":{"enabled":true,"interval":"10s"}}}`)
		q := fmt.Sprintf(`sum by (pod) (rolis_commits_total{namespace=%q})`, d.ns)
		var before map[string]float64
		Eventually(func(g Gomega) {
			var err error
			before, err = promQuery(fmt.Sprintf(`up{namespace=%q}`, d.ns))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(before).To(HaveLen(len(d.pods)))
			for p, up := range before {
				g.Expect(up).To(Equal(1.0), p)
			}
			before, err = promQuery(q)
			g.Expect(err).NotTo(HaveOccurred())
		}).WithTimeout(2 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
		leader := d.cluster().Status.Leader
		d.startLoad(5)
		d.writesFlowing(30 * time.Second)
		Eventually(func(g Gomega) {
			now, err := promQuery(q)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(now[leader]).To(BeNumerically(">", before[leader]+10), "commits of the leader %s", leader)
		}).WithTimeout(2 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
		d.verify()
	})

	It("helm test passes (a RolisCluster of its own becomes Ready)", Label("quick", "helm-test"), func() {
		start := time.Now()
		out, err := helm(10*time.Minute, "test", operatorRelease, "-n", operatorNS, "--timeout", "8m")
		GinkgoWriter.Println(out)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("helm test passed in %v\n", time.Since(start).Round(time.Second))
	})
})
