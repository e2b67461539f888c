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

	Context("with members that follow the failover protocol", func() {
		BeforeEach(func() {
			fc = newFakeCluster(3, false)
			fc.members[2].st.Watermark = &rolisv1.LogKey{Epoch: 0, Ts: 900} // the most advanced
			c.Spec.Failover.Timeout = &metav1.Duration{Duration: 2 * time.Second}
			Expect(k8s.Create(ctx, c)).To(Succeed())
			startPods(ctx, c, []int32{1, 2, 3}, "rev1", addrOf)
		})

		It("elects the most advanced member on creation, records the epoch decision, labels the leader and says so", func() {
			Eventually(func() uint32 { return epochRecord(ctx, ns)().GetLeaderId() }).Should(Equal(uint32(2)))
			rec := epochRecord(ctx, ns)()
			Expect(rec.GetEpoch()).To(Equal(uint64(1)))
			Expect(fc.status(2).GetRole()).To(Equal(rolisv1.Role_LEADER))

			Eventually(podRoles(ctx, c)).Should(Equal(map[string]string{"db-1": "follower", "db-2": "leader", "db-3": "follower"}))
			Eventually(func() string { return getCluster(ctx, c).Status.Leader }).Should(Equal("db-2"))
			Expect(getCluster(ctx, c).Status.Epoch).To(Equal(int64(1)))
			Eventually(condition(ctx, c, dbv1.ConditionAvailable)).Should(HavePrefix("True/LeaderServing"))
			Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/ClusterReady"))
			Eventually(func() dbv1.ClusterPhase { return getCluster(ctx, c).Status.Phase }).Should(Equal(dbv1.PhaseRunning))
			Eventually(eventReasons(ctx, c)).Should(ContainElements(
				ReasonPromoting, "FailoverPrepare", "FailoverDecide", "FailoverOpen", "FailoverAnnounce", ReasonLeaderLabelMoved, ReasonPromoted))
			for _, id := range []uint32{1, 3} {
				Eventually(func() uint32 { return fc.status(id).GetLeaderId() }).Should(Equal(uint32(2)), "followers were told the leader")
			}
		})

		It("fails over to the most advanced survivor when the leader is dead longer than failover.timeout", func() {
			Eventually(func() uint32 { return epochRecord(ctx, ns)().GetLeaderId() }).Should(Equal(uint32(2)))
			Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
			fc.members[3].st.Watermark = &rolisv1.LogKey{Epoch: 1, Ts: 950}
			fc.members[1].st.Watermark = &rolisv1.LogKey{Epoch: 1, Ts: 940}

			killed := time.Now()
			fc.members[2].kill()
			Eventually(condition(ctx, c, dbv1.ConditionFailingOver)).Should(HavePrefix("True/LeaderUnhealthy"))
			Eventually(condition(ctx, c, dbv1.ConditionAvailable)).Should(HavePrefix("False/LeaderUnhealthy"))
			Eventually(func() dbv1.ClusterPhase { return getCluster(ctx, c).Status.Phase }).Should(Equal(dbv1.PhaseFailingOver))

			Eventually(func() uint64 { return epochRecord(ctx, ns)().GetEpoch() }, "20s").Should(Equal(uint64(2)))
			Expect(time.Since(killed)).To(BeNumerically(">=", 2*time.Second), "no failover before failover.timeout")
			rec := epochRecord(ctx, ns)()
			Expect(rec.GetLeaderId()).To(Equal(uint32(3)), "member 3 is the most advanced survivor")
			Expect(rec.GetCut()).To(HaveKey(uint64(1)), "the record carries the cut of epoch 1")

			Eventually(podRoles(ctx, c)).Should(Equal(map[string]string{"db-1": "follower", "db-2": "follower", "db-3": "leader"}))
			Eventually(func() string { return getCluster(ctx, c).Status.Leader }).Should(Equal("db-3"))
			Eventually(func() int64 { return getCluster(ctx, c).Status.Epoch }).Should(Equal(int64(2)))
			Eventually(condition(ctx, c, dbv1.ConditionFailingOver)).Should(HavePrefix("False/"))
			Eventually(condition(ctx, c, dbv1.ConditionAvailable)).Should(HavePrefix("True/LeaderServing"))
			Expect(eventReasons(ctx, c)()).To(ContainElement(ReasonLeaderUnhealthy))

			By("the dead leader coming back stays a follower: the epoch fences it")
			fc.members[2].restart()
			Consistently(func() uint32 { return epochRecord(ctx, ns)().GetLeaderId() }, "3s").Should(Equal(uint32(3)))
			Eventually(func() uint32 { return fc.status(2).GetLeaderId() }).Should(Equal(uint32(3)), "it is told the new leader")
			Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
		})

		It("does not fail over a leader that recovers within failover.timeout", func() {
			Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
			fc.mu.Lock()
			fc.members[2].healthy = false
			fc.mu.Unlock()
			Eventually(condition(ctx, c, dbv1.ConditionFailingOver)).Should(HavePrefix("True/LeaderUnhealthy"))
			fc.mu.Lock()
			fc.members[2].healthy = true
			fc.mu.Unlock()
			Eventually(condition(ctx, c, dbv1.ConditionFailingOver)).Should(HavePrefix("False/"))
			Consistently(func() uint64 { return epochRecord(ctx, ns)().GetEpoch() }, "3s").Should(Equal(uint64(1)))
		})

		It("waits for a majority before promoting anyone", func() {
			Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
			fc.members[1].kill()
			fc.members[2].kill()
			Eventually(condition(ctx, c, dbv1.ConditionDegraded), "15s").Should(HavePrefix("True/NoQuorum"))
			Expect(epochRecord(ctx, ns)().GetEpoch()).To(Equal(uint64(1)))
			Expect(fc.count(3, "PrepareFailover")).To(BeZero(), "no promotion without a majority")
		})

		It("finishes a decided promotion whose leader did not open (operator stopped in between)", func() {
			Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
			// Make member 1 a candidate that promised epoch 2, and decide
			// epoch 2 for it in the store, as if the operator had died
			// right after the compare-and-set.
			fc.mu.Lock()
			for _, m := range fc.members {
				m.st.PromisedEpoch = 2
				if m.st.Role == rolisv1.Role_LEADER {
					m.st.Role = rolisv1.Role_FOLLOWER
				}
			}
			fc.members[1].st.Role = rolisv1.Role_CANDIDATE
			fc.mu.Unlock()
			store := &leadership.ConfigMapStore{Reader: k8s, Writer: k8s, Key: byKey(ns, "db-epoch")}
			from, err := store.Load(ctx)
			Expect(err).NotTo(HaveOccurred())
			_, err = store.CompareAndSwap(ctx, from.Version, &rolisv1.EpochRecord{Epoch: 2, LeaderId: 1, Watermark: &rolisv1.LogKey{Epoch: 1}})
			Expect(err).NotTo(HaveOccurred())

			Eventually(func() rolisv1.Role { return fc.status(1).GetRole() }).Should(Equal(rolisv1.Role_LEADER))
			Expect(epochRecord(ctx, ns)().GetEpoch()).To(Equal(uint64(2)), "resuming decides nothing new")
			Eventually(podRoles(ctx, c)).Should(HaveKeyWithValue("db-1", "leader"))
			Eventually(eventReasons(ctx, c)).Should(ContainElement(ReasonLeaderOpening))
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
