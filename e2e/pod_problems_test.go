package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// reasonImagePullFailed is controllers.ReasonImagePullFailed (the suite
// leaves the operator's package out of its binary).
const reasonImagePullFailed = "ImagePullFailed"

// conditionOf is a condition of the cluster as "Status/Reason: Message"
// ("absent" without it), for checks and readable failures.
func conditionOf(c *dbv1.RolisCluster, t string) string {
	cond := meta.FindStatusCondition(c.Status.Conditions, t)
	if cond == nil {
		return "absent"
	}
	return fmt.Sprintf("%s/%s: %s", cond.Status, cond.Reason, cond.Message)
}

// warningEvents lists the Warning events with reason about the cluster, one
// "related-object: message" line each.
func (d *database) warningEvents(reason string) []string {
	GinkgoHelper()
	out := must(30*time.Second, "-n", d.ns, "get", "events", "--field-selector",
		"type=Warning,reason="+reason+",involvedObject.kind=RolisCluster,involvedObject.name="+d.name,
		"-o", `jsonpath={range .items[*]}{.related.name}: {.message}{"\n"}{end}`)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// podUIDs maps each member pod to its uid.
func podUIDs(pods map[string]corev1.Pod) map[string]string {
	out := map[string]string{}
	for name, p := range pods {
		out[name] = string(p.UID)
	}
	return out
}

// A member pod that cannot run, for real: the envtest specs
// (controllers/member_pods_test.go) write pod statuses; here the kubelet
// reports them. An image the node does not have, with imagePullPolicy
// Never, fails at once with ErrImageNeverPull on any node, without a
// registry or a network (docs/operator.md, "Rolling restarts").
var _ = Describe("A member pod that cannot run", func() {
	It("an image that does not exist rolled out under load: the rollout stops at the first follower, Degraded and a Warning event name its pod; the repaired spec replaces only that pod, nothing lost",
		Label("pod-problems"), func() {
			d := loadedSample("e2e-podproblems", 12)
			before := d.cluster()
			image, policy := before.Spec.Image, before.Spec.ImagePullPolicy
			if policy == "" {
				policy = corev1.PullIfNotPresent
			}
			uids := podUIDs(d.memberPods())
			// The rollout restarts followers first, highest id first.
			var victim string
			for _, p := range d.pods {
				if p != before.Status.Leader {
					victim = p
				}
			}
			missing := image + "-missing"

			By("rolling out " + missing + " (imagePullPolicy Never): " + victim + " is restarted and cannot run")
			start := time.Now()
			d.patchSpec(fmt.Sprintf(`{"image":%q,"imagePullPolicy":"Never"}`, missing))
			c := waitCluster(d.ns, d.name, 3*time.Minute, time.Second, func(g Gomega, c *dbv1.RolisCluster) {
				g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
				g.Expect(conditionOf(c, dbv1.ConditionDegraded)).To(And(
					HavePrefix("True/"+reasonImagePullFailed), ContainSubstring("pod "+victim), ContainSubstring(missing)))
			})
			GinkgoWriter.Printf("Degraded after %v: %s\n", time.Since(start).Round(time.Second), conditionOf(c, dbv1.ConditionDegraded))
			AddReportEntry("Degraded after", time.Since(start).Round(time.Second).String())
			Expect(c.Status.Phase).To(Equal(dbv1.PhaseDegraded))
			Eventually(func() []string { return d.warningEvents(reasonImagePullFailed) }).
				WithTimeout(time.Minute).WithPolling(2 * time.Second).
				Should(ContainElement(And(HavePrefix(victim+": "), ContainSubstring("pod "+victim), ContainSubstring(missing))))
			GinkgoWriter.Printf("events: %v\n", d.warningEvents(reasonImagePullFailed))

			By("the rollout stops at the broken pod: the others run on, the leader and a majority serve")
			broken := d.memberPods()[victim]
			Expect(string(broken.UID)).NotTo(Equal(uids[victim]), "the victim was restarted")
			Expect(broken.Spec.Containers[0].Image).To(Equal(missing))
			Consistently(func(g Gomega) {
				pods := d.memberPods()
				for name, uid := range uids {
					if name != victim {
						g.Expect(string(pods[name].UID)).To(Equal(uid), "%s restarted while %s cannot run", name, victim)
					}
				}
				c := d.cluster()
				g.Expect(conditionOf(c, dbv1.ConditionAvailable)).To(HavePrefix("True/"))
				g.Expect(conditionOf(c, dbv1.ConditionProgressing)).To(ContainSubstring("waiting for " + victim + " to come back"))
			}).WithTimeout(20 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
			d.writesFlowing(30 * time.Second)
			Expect(d.cluster().Status.Epoch).To(Equal(before.Status.Epoch), "no failover, no switchover")

			By("repairing the spec: only " + victim + " is replaced, the cluster is Ready again")
			start = time.Now()
			d.patchSpec(fmt.Sprintf(`{"image":%q,"imagePullPolicy":%q}`, image, policy))
			waitPodReplaced(d.ns, victim, string(broken.UID), 3*time.Minute)
			d.fw.restart(victim)
			c = waitCluster(d.ns, d.name, 3*time.Minute, time.Second, func(g Gomega, c *dbv1.RolisCluster) {
				g.Expect(isReady(c)).To(BeTrue(), "%s; conditions: %v", describe(c), c.Status.Conditions)
				g.Expect(conditionOf(c, dbv1.ConditionDegraded)).To(HavePrefix("False/"))
			})
			GinkgoWriter.Printf("repaired in %v: %s\n", time.Since(start).Round(time.Second), describe(c))
			AddReportEntry("repaired in", time.Since(start).Round(time.Second).String())
			pods := d.memberPods()
			for name, uid := range uids {
				if name != victim {
					Expect(string(pods[name].UID)).To(Equal(uid), "%s runs the repaired revision already: not restarted", name)
				}
				Expect(pods[name].Spec.Containers[0].Image).To(Equal(image), name)
			}
			Expect(c.Status.Epoch).To(Equal(before.Status.Epoch), "the leader was never touched")
			Expect(slices.Sorted(maps.Keys(pods))).To(Equal(d.pods))
			d.waitMembersServing(2 * time.Minute)
			d.writesFlowing(30 * time.Second)
			d.verify()
		})
})
