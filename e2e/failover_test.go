package e2e

import (
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// failover is what one leader loss measured.
type failover struct {
	elected time.Duration // fault to a new leader in the status
	gap     time.Duration // fault to writes served again (failoverGap)
}

// loseLeader runs fault against the leader under load and checks that a new
// leader of a newer epoch is reported within the failover bound and that
// writes resume; it prints the failover gap (fault to first acknowledged
// write), keeps it in d.failovers and returns the old leader's pod.
func (d *database) loseLeader(what string, fault func(pod string)) string {
	GinkgoHelper()
	c := d.cluster()
	old, epoch := c.Status.Leader, c.Status.Epoch
	By(what + " " + old)
	lost := time.Now()
	fault(old)
	c = d.waitNewLeader(epoch, E.FailoverBound)
	elected := time.Since(lost)
	d.writesFlowing(E.FailoverBound)
	gap := d.failoverGap(lost)
	GinkgoWriter.Printf("%s %s: %s leads epoch %d after %v; failover gap (fault to writes served again) %v\n",
		what, old, c.Status.Leader, c.Status.Epoch, elected.Round(time.Millisecond), gap.Round(time.Millisecond))
	AddReportEntry("failover gap", gap.Round(time.Millisecond).String())
	AddReportEntry("new leader after", elected.Round(time.Millisecond).String())
	d.failovers = append(d.failovers, failover{elected: elected, gap: gap})
	return old
}

// failoverGap measures the outage after a fault at lost: until the first
// successful availability probe after the longest run of failed probes
// (a leader that shuts down gracefully still answers for a moment after the
// fault, so the first acknowledgement after the fault would say little).
// With no failed probe it is the time to the first write acknowledged after
// lost.
func (d *database) failoverGap(lost time.Time) time.Duration {
	GinkgoHelper()
	if end, ok := d.avail.recoveredAfter(lost); ok {
		return end.Sub(lost)
	}
	gap, ok := d.w.FirstAckAfter(lost)
	Expect(ok).To(BeTrue(), "no write acknowledged after the fault")
	return gap
}

// loadedSample is the sample cluster of a new namespace with the workload
// running and acknowledging writes.
func loadedSample(prefix string, seed uint64, changes ...func(spec map[string]any)) *database {
	GinkgoHelper()
	d := createSample(prefix, changes...)
	d.startLoad(seed)
	d.writesFlowing(30 * time.Second)
	return d
}

// rejoin waits until the pod runs again under a new uid (uid "" when only
// its container restarted) and the cluster is Ready.
func (d *database) rejoin(pod, uid string) {
	GinkgoHelper()
	By("letting " + pod + " come back and catch up")
	if uid != "" {
		waitPodReplaced(d.ns, pod, uid, 3*time.Minute)
	} else {
		waitContainerRestarted(d.ns, pod, 3*time.Minute)
	}
	d.fw.restart(pod)
	waitReady(d.ns, d.name, 3*time.Minute)
	d.waitMembersServing(2 * time.Minute)
}

// waitMembersServing waits until every member answers its status as the
// leader or a follower (not a candidate, nor catching up).
func (d *database) waitMembersServing(limit time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, p := range d.pods {
			st, err := d.status(p)
			g.Expect(err).NotTo(HaveOccurred(), p)
			g.Expect(st.GetRole()).To(BeElementOf(rolisv1.Role_LEADER, rolisv1.Role_FOLLOWER), p)
		}
	}).WithTimeout(limit).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// rejoinAndVerify is rejoin, then the ledger checks.
func (d *database) rejoinAndVerify(pod, uid string) {
	GinkgoHelper()
	d.rejoin(pod, uid)
	d.verify()
}

var _ = Describe("Failover under load", func() {
	It("leader pod deleted: a new leader within the bound, writes resume, no acknowledged transaction lost",
		Label("quick", "chaos", "leader-delete"), func() {
			d := loadedSample("e2e-leader", 1)
			var uid string
			old := d.loseLeader("deleting the leader pod", func(pod string) {
				uid = podUID(d.ns, pod)
				must(time.Minute, "-n", d.ns, "delete", "pod", pod, "--wait=false")
			})
			d.rejoinAndVerify(old, uid)
		})

	It("follower's rolisd killed with SIGKILL from its node: writes go on, the container restarts and rejoins",
		Label("quick", "chaos", "follower-kill"), func() {
			d := loadedSample("e2e-follower", 2)
			c := d.cluster()
			var follower string
			for _, p := range d.pods {
				if p != c.Status.Leader {
					follower = p
					break
				}
			}
			By("kill -9 of rolisd in follower " + follower)
			// A real SIGKILL of the process (no SIGTERM first, as a
			// grace-0 pod deletion would send): the abrupt crash.
			signalMember(d.ns, follower, "KILL")
			// The majority goes on without it, within the bound a leader's
			// loss has: on a loaded 2-core VM, through port-forwards, the
			// workload acknowledged ~1 write a second (9 in 10 s failed this).
			d.writesFlowing(E.FailoverBound)
			Expect(d.cluster().Status.Epoch).To(Equal(c.Status.Epoch), "a follower's loss must not cause a failover")
			d.rejoinAndVerify(follower, "")
		})

	It("every pod deleted at once under load: the members come back from their volumes with every acknowledged transaction",
		Label("quick", "chaos", "all-pods-delete", "durability"), func() {
			d := loadedSample("e2e-allpods", 5)
			c := d.cluster()
			uids := map[string]string{}
			for _, p := range d.pods {
				uids[p] = podUID(d.ns, p)
			}
			By("deleting every pod of " + d.name + " at once")
			lost := time.Now()
			must(time.Minute, "-n", d.ns, "delete", "pod", "-l", "app.kubernetes.io/instance="+d.name, "--wait=false")
			for _, p := range d.pods {
				waitPodReplaced(d.ns, p, uids[p], 3*time.Minute)
				d.fw.restart(p)
			}
			n := d.waitNewLeader(c.Status.Epoch, 3*time.Minute)
			d.writesFlowing(E.FailoverBound)
			GinkgoWriter.Printf("every pod deleted: %s leads epoch %d; writes served again %v after the deletion\n",
				n.Status.Leader, n.Status.Epoch, time.Since(lost).Round(time.Millisecond))
			waitReady(d.ns, d.name, 3*time.Minute)
			d.verify()
		})

	It("leader's rolisd killed with SIGKILL from its node: failover, the container restarts and rejoins",
		Label("chaos", "leader-kill9"), func() {
			d := loadedSample("e2e-kill9", 3)
			old := d.loseLeader("kill -9 of rolisd in the leader pod", func(pod string) { signalMember(d.ns, pod, "KILL") })
			d.rejoinAndVerify(old, "")
		})

	It("leader paused (SIGSTOP) past the failover timeout, then resumed: it is fenced and rejoins",
		Label("chaos", "leader-pause"), func() {
			d := loadedSample("e2e-pause", 4)
			var paused string
			DeferCleanup(func() {
				if paused != "" {
					signalMember(d.ns, paused, "CONT")
				}
			})
			old := d.loseLeader("SIGSTOP of the leader", func(pod string) {
				signalMember(d.ns, pod, "STOP")
				paused = pod
			})
			time.Sleep(2 * time.Second)
			By("resuming " + old)
			signalMember(d.ns, old, "CONT")
			paused = ""
			Expect(d.cluster().Status.Leader).NotTo(Equal(old))
			d.rejoinAndVerify(old, "")
		})
})
