package e2e

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func uncordon(node string) {
	GinkgoHelper()
	must(time.Minute, "uncordon", node)
}

var _ = Describe("Node maintenance", func() {
	It("leader's node drained, then uncordoned: failover, the disruption budget refuses a second eviction, the member rejoins",
		Label("chaos", "drain"), func() {
			d := loadedSample("e2e-drain", 7)
			nodes := d.spread()
			var node, uid string
			old := d.loseLeader("draining the node of the leader", func(pod string) {
				node, uid = nodes[pod], podUID(d.ns, pod)
				DeferCleanup(uncordon, node)
				out, err := kubectl(4*time.Minute, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=3m")
				Expect(err).NotTo(HaveOccurred(), "kubectl drain %s: %s", node, out)
			})

			// The drained member's volume is on the cordoned node, so its pod
			// cannot start again before the uncordon: one member is down.
			By("evicting another member while " + old + " is down")
			ready := must(20*time.Second, "-n", d.ns, "get", "pod", old, "-o",
				`jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			Expect(ready).NotTo(Equal("True"), "%s came back on another node: the budget cannot be checked", old)
			Eventually(func() string {
				return must(20*time.Second, "-n", d.ns, "get", "pdb", d.name, "-o", "jsonpath={.status.disruptionsAllowed}")
			}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Equal("0"))
			for _, p := range d.pods {
				if p == old {
					continue
				}
				out, ok := evict(d.ns, p)
				GinkgoWriter.Printf("eviction of %s: %s\n", p, out)
				Expect(ok).To(BeFalse(), "%s was evicted while %s was down", p, old)
				Expect(strings.ToLower(out)).To(ContainSubstring("disruption budget"))
			}

			By("uncordoning " + node)
			uncordon(node)
			d.rejoinAndVerify(old, uid)
		})
})
