package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
	"github.com/rolisdb/rolis/internal/ledger"
	"github.com/rolisdb/rolis/pkg/client"
)

// patchSpec merges patch (JSON) into the cluster's spec, as a user would
// with kubectl patch.
func (d *database) patchSpec(patch string) {
	GinkgoHelper()
	must(time.Minute, "-n", d.ns, "patch", "roliscluster", d.name, "--type", "merge", "-p", `{"spec":`+patch+`}`)
}

// memberPods reads the cluster's member pods.
func (d *database) memberPods() map[string]corev1.Pod {
	GinkgoHelper()
	var l corev1.PodList
	out := must(30*time.Second, "-n", d.ns, "get", "pods", "-l", specs.LabelInstance+"="+d.name, "-o", "json")
	Expect(json.Unmarshal([]byte(out), &l)).To(Succeed())
	pods := map[string]corev1.Pod{}
	for _, p := range l.Items {
		pods[p.Name] = p
	}
	return pods
}

// waitSettled waits until the operator reports the newest spec Ready with
// replicas members, and done(pods) holds; it returns the cluster.
func (d *database) waitSettled(replicas int32, limit time.Duration, done func(g Gomega, pods map[string]corev1.Pod)) *dbv1.RolisCluster {
	GinkgoHelper()
	return waitCluster(d.ns, d.name, limit, 2*time.Second, func(g Gomega, c *dbv1.RolisCluster) {
		g.Expect(isReady(c)).To(BeTrue(), "%s; conditions: %v", describe(c), c.Status.Conditions)
		g.Expect(c.Status.Replicas).To(Equal(replicas))
		g.Expect(c.Status.ReadyReplicas).To(Equal(replicas))
		done(g, d.memberPods())
	})
}

// scaleTo changes spec.replicas under load and waits until the operator
// reports the cluster Ready at that size, the leader reports that many
// members and every member caught up; the port-forwards follow.
func (d *database) scaleTo(n int) {
	GinkgoHelper()
	By(fmt.Sprintf("scaling to %d", n))
	start := time.Now()
	d.patchSpec(fmt.Sprintf(`{"replicas":%d}`, n))
	c := d.waitSettled(int32(n), 8*time.Minute, func(g Gomega, pods map[string]corev1.Pod) {
		g.Expect(pods).To(HaveLen(n))
	})
	GinkgoWriter.Printf("Ready with %d members after %v: %s\n", n, time.Since(start).Round(time.Second), describe(c))
	pods := podNames(d.name, n)
	for _, p := range pods {
		if !slices.Contains(d.pods, p) {
			d.fw.add(p)
		}
	}
	for _, p := range d.pods {
		if !slices.Contains(pods, p) {
			d.fw.remove(p)
		}
	}
	d.pods = pods
	st, err := d.status(c.Status.Leader)
	Expect(err).NotTo(HaveOccurred())
	Expect(st.GetMembers()).To(HaveLen(n), "the leader's membership")
	d.writesFlowing(30 * time.Second)
	d.waitCaughtUp(c.Status.Leader, 2*time.Minute)
	// Under load only a snapshot's bank total can be compared: each
	// follower's read-only snapshot must hold all the money.
	for _, p := range d.pods {
		if p == c.Status.Leader {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		state, err := ledger.Dump(ctx, client.Config{Endpoints: []string{d.fw.clientAddr(p)}}, false)
		cancel()
		Expect(err).NotTo(HaveOccurred(), "reading %s", p)
		Expect(ledger.BankTotal(state)).To(Equal(ledger.Accounts*ledger.Initial), "bank total on %s", p)
	}
	AddReportEntry(fmt.Sprintf("scaled to %d in", n), time.Since(start).Round(time.Second).String())
}

// rollOut applies patch under load and waits until every member pod was
// replaced, each satisfying updated, and the cluster is Ready; the leader
// must have moved once at most (a switchover before its restart).
func (d *database) rollOut(patch string, updated func(g Gomega, p corev1.Pod)) {
	GinkgoHelper()
	before := d.cluster()
	uids := map[string]string{}
	for name, p := range d.memberPods() {
		uids[name] = string(p.UID)
	}
	By("patching the spec: " + patch)
	start := time.Now()
	d.patchSpec(patch)
	c := d.waitSettled(before.Spec.Replicas, 10*time.Minute, func(g Gomega, pods map[string]corev1.Pod) {
		g.Expect(pods).To(HaveLen(len(d.pods)))
		for name, p := range pods {
			g.Expect(string(p.UID)).NotTo(Equal(uids[name]), "%s not restarted yet", name)
			updated(g, p)
		}
	})
	took := time.Since(start)
	GinkgoWriter.Printf("rolled out in %v: leader %s epoch %d -> %s\n", took.Round(time.Second), before.Status.Leader,
		before.Status.Epoch, describe(c))
	AddReportEntry("rolled out in", took.Round(time.Second).String())
	Expect(c.Status.Leader).NotTo(Equal(before.Status.Leader), "the old leader was restarted without a switchover")
	d.writesFlowing(30 * time.Second)
}

var _ = Describe("Changes under load", func() {
	It("scaled 3→5→3 under load: members added and removed one at a time, no acknowledged transaction lost",
		Label("chaos", "scale"), func() {
			d := loadedSample("e2e-scale", 8)
			epoch := d.cluster().Status.Epoch
			d.scaleTo(5)
			d.scaleTo(3)
			Expect(d.cluster().Status.Epoch).To(Equal(epoch), "scaling must not fail over")
			d.verify()
		})

	It("rolling image upgrade under load: followers, a switchover, then the old leader; nothing lost",
		Label("chaos", "upgrade"), func() {
			d := loadedSample("e2e-upgrade", 10)
			image := d.cluster().Spec.Image + upgradeSuffix
			d.rollOut(fmt.Sprintf(`{"image":%q}`, image), func(g Gomega, p corev1.Pod) {
				g.Expect(p.Spec.Containers[0].Image).To(Equal(image), p.Name)
			})
			d.verify()
		})

	It("workerThreads, batchSize, batchTimeout and prefaultMemory changed under load: a rolling restart with the new settings, nothing lost; replicationStreams cannot change",
		Label("chaos", "settings"), func() {
			d := loadedSample("e2e-settings", 11)
			c := d.cluster()
			threads, streams := c.Spec.WorkerThreads, c.Spec.ReplicationStreams
			By("changing replicationStreams: refused (every member must run as many replication streams)")
			out, err := kubectl(time.Minute, "-n", d.ns, "patch", "roliscluster", d.name, "--type", "merge",
				"-p", fmt.Sprintf(`{"spec":{"replicationStreams":%d}}`, streams+1))
			Expect(err).To(HaveOccurred(), out)
			Expect(out).To(ContainSubstring("replicationStreams is immutable"))
			Expect(d.cluster().Spec.ReplicationStreams).To(Equal(streams))

			// Members run different worker counts while the pods roll (one
			// worker fewer: the sample has as many streams as workers); the
			// new ones fault in 256 MiB as huge pages at start (below the
			// sample's 1Gi limit).
			threads--
			Expect(threads).To(BeNumerically(">=", 1), "the sample runs 2 workers")
			patch := fmt.Sprintf(`{"workerThreads":%d,"batchSize":50,"batchTimeout":"2ms","prefaultMemory":"256Mi"}`, threads)
			d.rollOut(patch, func(g Gomega, p corev1.Pod) {
				g.Expect(p.Spec.Containers[0].Args).To(ContainElement(fmt.Sprintf("--worker-threads=%d", threads)), p.Name)
				g.Expect(p.Spec.Containers[0].Env).To(ContainElements(corev1.EnvVar{Name: specs.EnvBatchSize, Value: "50"},
					corev1.EnvVar{Name: specs.EnvBatchTimeout, Value: "2ms"},
					corev1.EnvVar{Name: specs.EnvPrefaultMemory, Value: "268435456"},
					corev1.EnvVar{Name: specs.EnvHugePages, Value: "true"}), p.Name)
			})
			for name := range d.memberPods() {
				logs := must(time.Minute, "-n", d.ns, "logs", name)
				Expect(logs).To(ContainSubstring("prefaulted 256 MiB in"), name)
			}
			d.verify()
		})
})

// upgradeSuffix makes the second tag of the rolisd image that
// hack/kind/load.sh loads into the nodes (the same image under another
// name: a new pod template for the rollout).
const upgradeSuffix = "-next"
