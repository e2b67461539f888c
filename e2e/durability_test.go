package e2e

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// claimUIDs maps each member's data claim (data-<pod>) to its uid; a claim
// that is missing maps to "".
func claimUIDs(ns string, pods []string) map[string]string {
	GinkgoHelper()
	out := must(30*time.Second, "-n", ns, "get", "pvc", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.status.phase}{"\n"}{end}`)
	have := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[2] == "Bound" {
			have[f[0]] = f[1]
		}
	}
	uids := map[string]string{}
	for _, p := range pods {
		uids["data-"+p] = have["data-"+p]
	}
	return uids
}

// memberPods lists the pods of a RolisCluster that still exist.
func memberPods(ns, name string) []string {
	GinkgoHelper()
	out := must(30*time.Second, "-n", ns, "get", "pods", "-l", "app.kubernetes.io/instance="+name, "-o", "name")
	return strings.Fields(out)
}

var _ = Describe("Durability under load", func() {
	It("every member's rolisd killed with SIGKILL at once: the containers restart from their volumes with every acknowledged transaction",
		Label("quick", "chaos", "all-kill9", "durability"), func() {
			d := loadedSample("e2e-allkill", 6)
			time.Sleep(5 * time.Second) // a log of some length for the members to recover
			c := d.cluster()
			restarts := map[string]int{}
			for _, p := range d.pods {
				restarts[p] = restartCount(d.ns, p)
			}
			By("kill -9 of rolisd in every member at once, from the nodes")
			lost := time.Now()
			signalMembers(d.ns, d.pods, "KILL")
			for _, p := range d.pods {
				waitContainerRestartedSince(d.ns, p, restarts[p], 3*time.Minute)
				d.fw.restart(p)
			}
			n := d.waitNewLeader(c.Status.Epoch, 3*time.Minute)
			d.writesFlowing(E.FailoverBound)
			back := time.Since(lost)
			GinkgoWriter.Printf("every rolisd killed: %s leads epoch %d (was %s, epoch %d); writes served again %v after the kill\n",
				n.Status.Leader, n.Status.Epoch, c.Status.Leader, c.Status.Epoch, back.Round(time.Millisecond))
			AddReportEntry("writes served again after", back.Round(time.Millisecond).String())
			waitReady(d.ns, d.name, 3*time.Minute)
			d.verify()
		})

	It("RolisCluster deleted and re-created over its retained volumes: every acknowledged transaction comes back",
		Label("chaos", "recreate", "durability"), func() {
			d := loadedSample("e2e-recreate", 7)
			time.Sleep(5 * time.Second) // a log of some length for the members to recover
			claims := claimUIDs(d.ns, d.pods)
			for claim, uid := range claims {
				Expect(uid).NotTo(BeEmpty(), "claim %s bound", claim)
			}
			By("deleting the RolisCluster " + d.name + " under load")
			deleted := time.Now()
			must(3*time.Minute, "-n", d.ns, "delete", "roliscluster", d.name, "--wait=true", "--timeout=150s")
			Eventually(func() []string { return memberPods(d.ns, d.name) }).WithTimeout(3*time.Minute).
				WithPolling(2*time.Second).Should(BeEmpty(), "member pods left after the RolisCluster was deleted")
			gone := time.Since(deleted)
			// The default retention policy (Retain) keeps every member's
			// claim, with its data, when the cluster is deleted.
			Expect(claimUIDs(d.ns, d.pods)).To(Equal(claims), "claims after the deletion")
			GinkgoWriter.Printf("RolisCluster and its pods gone after %v; claims kept: %v\n", gone.Round(time.Second), claims)

			By("re-applying the same manifest")
			applied := time.Now()
			applySample(d.ns)
			n := waitReady(d.ns, d.name, 5*time.Minute)
			for _, p := range d.pods {
				d.fw.restart(p)
			}
			d.writesFlowing(E.FailoverBound)
			back := time.Since(applied)
			GinkgoWriter.Printf("re-created: %s; writes served again %v after the apply (%v after the deletion)\n",
				describe(n), back.Round(time.Millisecond), time.Since(deleted).Round(time.Millisecond))
			AddReportEntry("writes served again after the re-apply", back.Round(time.Millisecond).String())
			// The new StatefulSet took the same claims, not new empty ones.
			Expect(claimUIDs(d.ns, d.pods)).To(Equal(claims), "claims of the re-created cluster")
			d.verify()
		})
})
