/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

func epochRecord(ctx context.Context, ns string) func() *rolisv1.EpochRecord {
	return func() *rolisv1.EpochRecord {
		cm := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, byKey(ns, "db-epoch"), cm)).To(Succeed())
		rec, err := leadership.DecodeRecord(cm.Data[specs.KeyEpochRecord])
		Expect(err).NotTo(HaveOccurred())
		return rec
	}
}

var _ = Describe("Leadership", func() {
	var (
		ctx context.Context
		ns  string
		c   *dbv1.RolisCluster
		fc  *fakeCluster
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
		c = newCluster(ns, "db", 3)
	})
	AfterEach(func() {
		if fc != nil {
			fc.stop()
			fc = nil
		}
	})

	addrOf := func(id int32) string { return fc.members[uint32(id)].addr() }

	// Election, failover of a dead or paused leader, the fence, a leader
	// that recovers in time and resuming a decided record run against real
	// rolisd processes (rolisd_test.go). The fakes stay for what a real
	// rolisd cannot easily be made to do.
	Context("with members that follow the failover protocol", func() {
		BeforeEach(func() {
			fc = newFakeCluster(3, false)
			fc.members[2].st.Watermark = &rolisv1.LogKey{Epoch: 0, Ts: 900} // the most advanced
			c.Spec.Failover.Timeout = &metav1.Duration{Duration: 2 * time.Second}
			Expect(k8s.Create(ctx, c)).To(Succeed())
			startPods(ctx, c, []int32{1, 2, 3}, "rev1", addrOf)
		})

		// The kubelet's word is a fact: the process that led is gone, even
		// if something still answers at its address (here the fake, which
		// would keep the timeout path from ever firing).
		It("fails over at once when the kubelet reports the leader's container terminated, without waiting failover.timeout", func() {
			Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
			Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
				c.Spec.Failover.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
			})).To(Succeed())
			old := epochRecord(ctx, ns)()
			p := &corev1.Pod{}
			Expect(k8s.Get(ctx, byKey(ns, specs.PodName(c, int32(old.GetLeaderId()))), p)).To(Succeed())
			before := p.DeepCopy()
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: specs.ContainerRun, RestartCount: 1,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137}}}}
			Expect(k8s.Status().Patch(ctx, p, client.MergeFrom(before))).To(Succeed())

			Eventually(func() uint64 { return epochRecord(ctx, ns)().GetEpoch() }, "20s").Should(BeNumerically(">", old.GetEpoch()),
				"failed over long before the 10 min failover.timeout")
			Expect(epochRecord(ctx, ns)().GetLeaderId()).NotTo(Equal(old.GetLeaderId()))
			Expect(eventNotes(ctx, c, ReasonLeaderGone)).To(ContainElement(And(ContainSubstring(p.Name), ContainSubstring("exit code 137"))))
			Expect(eventReasons(ctx, c)()).NotTo(ContainElement(ReasonLeaderUnhealthy))
		})

		It("waits for a majority before promoting anyone", func() {
			Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
			fc.members[1].kill()
			fc.members[2].kill()
			Eventually(condition(ctx, c, dbv1.ConditionDegraded), "15s").Should(HavePrefix("True/NoQuorum"))
			Expect(epochRecord(ctx, ns)().GetEpoch()).To(Equal(uint64(1)))
			Expect(fc.count(3, "PrepareFailover")).To(BeZero(), "no promotion without a majority")
		})
	})

	Context("with a rolisd that has no replication layer (PrepareFailover is UNIMPLEMENTED)", func() {
		BeforeEach(func() {
			fc = newFakeCluster(3, true)
			// A long timeout keeps the backoff (10s, then 20s) well clear of
			// the test's windows on a loaded machine.
			c.Spec.Failover.Timeout = &metav1.Duration{Duration: 10 * time.Second}
			Expect(k8s.Create(ctx, c)).To(Succeed())
			startPods(ctx, c, []int32{1, 2, 3}, "rev1", addrOf)
		})

		It("reports Degraded with a clear message and retries with backoff instead of hot-looping", func() {
			Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(And(
				HavePrefix("True/"+ReasonFailoverUnsupported),
				ContainSubstring("answered UNIMPLEMENTED to Prepare"),
				ContainSubstring("no replication layer")))
			Expect(fc.total("PrepareFailover")).To(Equal(1))
			Expect(epochRecord(ctx, ns)().GetEpoch()).To(BeZero(), "nothing is decided")
			Expect(getCluster(ctx, c).Status.Phase).To(Equal(dbv1.PhaseDegraded))
			Expect(condition(ctx, c, dbv1.ConditionAvailable)()).To(HavePrefix("False/NoLeader"))
			Expect(eventReasons(ctx, c)()).To(ContainElement(ReasonFailoverUnsupported))

			// failover.timeout is 5s: within 4 more seconds no second attempt.
			Consistently(func() int { return fc.total("PrepareFailover") }, "4s").Should(Equal(1))
			// Probing goes on at its normal pace (every timeout/3), not in a loop.
			before := fc.total("Status")
			time.Sleep(3 * time.Second)
			Expect(fc.total("Status")-before).To(BeNumerically("<=", 3*4), "about two probes of three members in 3s")
			Eventually(func() int { return fc.total("PrepareFailover") }, "10s").Should(Equal(2), "the backoff retries")
			Expect(podRoles(ctx, c)()).NotTo(ContainElement("leader"), "no pod is labelled leader")
		})
	})

	Context("with members whose admin API cannot be reached", func() {
		It("keeps every member Unreachable with the reason and elects no one", func() {
			Expect(k8s.Create(ctx, c)).To(Succeed())
			startPods(ctx, c, []int32{1, 2, 3}, "rev1", func(int32) string { return "127.0.0.1:1" })
			Eventually(func() []string {
				var msgs []string
				for _, m := range getCluster(ctx, c).Status.Members {
					msgs = append(msgs, m.Role+": "+m.Message)
				}
				return msgs
			}).Should(HaveEach(And(HavePrefix("Unreachable"), ContainSubstring("Unavailable"))))
			Eventually(condition(ctx, c, dbv1.ConditionProgressing)).Should(ContainSubstring("0 of 3 members answer, a promotion needs a majority of 2"))
			Expect(epochRecord(ctx, ns)().GetEpoch()).To(BeZero())
		})
	})
})
