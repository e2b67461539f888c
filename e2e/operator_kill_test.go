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
	waitCluster(d.ns, d.name, limit, 100*time.Millisecond, func(g Gomega, c *dbv1.RolisCluster) {
		if c.Status.Epoch > epoch {
			StopTrying("the failover ended before the operator was killed").Now()
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, dbv1.ConditionFailingOver)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(BeEquivalentTo("True"))
		GinkgoWriter.Printf("failing over: %s: %s\n", cond.Reason, cond.Message)
	})
}

var _ = Describe("Operator failure", func() {
	It("operator killed during a failover: once it is back a new leader is chosen, nothing acknowledged is lost",
		Label("chaos", "operator-kill"), func() {
			d := loadedSample("e2e-operator", 6)
			replicas := operatorReplicas()
			DeferCleanup(startOperator, replicas) // whatever happens below
			// A paused leader is a suspicion, not a fact: the operator waits
			// failover.timeout before it promotes, which leaves time to kill it
			// in the middle (a deleted pod would be switched over at once).
			var paused string
			DeferCleanup(func() {
				if paused != "" {
					signalMember(d.ns, paused, "CONT")
				}
			})
			old := d.loseLeader("SIGSTOP of the leader, then killing the operator while it fails over", func(pod string) {
				epoch := d.cluster().Status.Epoch
				signalMember(d.ns, pod, "STOP")
				paused = pod
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
			By("resuming " + old)
			signalMember(d.ns, old, "CONT")
			paused = ""
			d.rejoinAndVerify(old, "")
		})
})
