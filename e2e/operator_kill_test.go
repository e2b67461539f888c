package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// waitFailingOver waits until the operator reports that it is failing over
// (FailingOver True) from epoch; it fails if a newer epoch is decided first
// (the failover ended before the spec could interfere with it).
func (d *database) waitFailingOver(epoch int64, limit time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c, err := getCluster(d.ns, d.name)
		g.Expect(err).NotTo(HaveOccurred())
		if c.Status.Epoch > epoch {
			StopTrying("the failover ended before the operator was killed").Now()
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, dbv1.ConditionFailingOver)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(BeEquivalentTo("True"))
		GinkgoWriter.Printf("failing over: %s: %s\n", cond.Reason, cond.Message)
	}).WithTimeout(limit).WithPolling(100 * time.Millisecond).Should(Succeed())
}

var _ = Describe("Operator failure", func() {
	It("operator killed during a failover: once it is back a new leader is chosen, nothing acknowledged is lost",
		Label("chaos", "operator-kill"), func() {
			d := loadedSample("e2e-operator", 6)
			replicas := operatorReplicas()
			DeferCleanup(startOperator, replicas) // whatever happens below
			var uid string
			old := d.loseLeader("deleting the leader pod, then killing the operator while it fails over", func(pod string) {
				epoch := d.cluster().Status.Epoch
				uid = podUID(d.ns, pod)
				must(time.Minute, "-n", d.ns, "delete", "pod", pod, "--wait=false")
				d.waitFailingOver(epoch, E.FailoverBound)
				By("killing every operator pod")
				stopOperator()
				Expect(d.cluster().Status.Epoch).To(Equal(epoch), "a new epoch was decided before the operator was killed")
				time.Sleep(10 * time.Second)
				Expect(d.cluster().Status.Epoch).To(Equal(epoch), "a new epoch was decided without an operator")
				By("starting the operator again")
				back := time.Now()
				startOperator(replicas)
				GinkgoWriter.Printf("operator available again %v after scaling it up\n", time.Since(back).Round(time.Millisecond))
			})
			d.rejoinAndVerify(old, uid)
		})
})
