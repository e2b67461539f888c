/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// setRevision plays the StatefulSet controller: it publishes the update
// revision of the current spec.
func setRevision(ctx context.Context, ns string, rev string) {
	setRevisionOf(ctx, &dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}}, rev)
}

// setRevisionOf is setRevision for cluster c's StatefulSet (again after a
// conflict with the operator's update of its spec).
func setRevisionOf(ctx context.Context, c *dbv1.RolisCluster, rev string) {
	GinkgoHelper()
	Eventually(func() error {
		sts := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, byKey(c.Namespace, specs.StatefulSetName(c)), sts); err != nil {
			return err
		}
		sts.Status.ObservedGeneration = sts.Generation
		sts.Status.UpdateRevision = rev
		sts.Status.Replicas = *sts.Spec.Replicas
		return k8s.Status().Update(ctx, sts)
	}).Should(Succeed())
}

var _ = Describe("Rolling restart after a change of engine settings", func() {
	It("restarts followers one at a time, switches over, then restarts the old leader", func() {
		ctx := context.Background()
		ns := newNamespace(ctx)
		c := newCluster(ns, "db", 3)
		c.Spec.Failover.Timeout = &metav1.Duration{Duration: 2 * time.Second}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		fc := newFakeCluster(3, false)
		defer fc.stop()
		fc.members[1].st.Watermark = &rolisv1.LogKey{Ts: 999} // member 1 will lead
		addr := func(id int32) string { return fc.members[uint32(id)].addr() }
		startPods(ctx, c, []int32{1, 2, 3}, "rev1", addr)
		setRevision(ctx, ns, "rev1")
		Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
		Expect(getCluster(ctx, c).Status.Leader).To(Equal("db-1"))

		// Play the StatefulSet controller: record the order in which the
		// operator deletes pods and recreate each at the new revision.
		var mu sync.Mutex
		var deleted []string
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				for _, id := range []int32{1, 2, 3} {
					err := k8s.Get(ctx, byKey(ns, specs.PodName(c, id)), &corev1.Pod{})
					if apierrors.IsNotFound(err) {
						mu.Lock()
						deleted = append(deleted, specs.PodName(c, id))
						mu.Unlock()
						startPod(ctx, c, id, "rev2")
					}
				}
			}
		}()
		deletions := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string{}, deleted...)
		}

		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
			c.Spec.BatchSize = 400
		})).To(Succeed())
		Eventually(func() string {
			sts := &appsv1.StatefulSet{}
			Expect(k8s.Get(ctx, byKey(ns, "db"), sts)).To(Succeed())
			return sts.Spec.Template.Annotations[specs.AnnotationConfigHash]
		}).Should(Equal(specs.ConfigHash(specs.EngineSettings(getCluster(ctx, c)))))
		setRevision(ctx, ns, "rev2")

		Eventually(deletions, "60s").Should(HaveLen(3))
		Expect(deletions()).To(Equal([]string{"db-3", "db-2", "db-1"}), "followers first (highest ordinal first), the old leader last")
		rec := epochRecord(ctx, ns)()
		Expect(rec.GetEpoch()).To(Equal(uint64(2)), "one switchover, before the leader restarted")
		Expect(rec.GetLeaderId()).NotTo(Equal(uint32(1)))
		Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
		Eventually(eventReasons(ctx, c)).Should(ContainElement(ReasonRollingRestart))
		close(stop)
		<-done
	})
})

var _ = Describe("Scaling", func() {
	It("adds members one at a time through the leader, 3 → 5, then removes them, 5 → 3", func() {
		ctx := context.Background()
		ns := newNamespace(ctx)
		c := newCluster(ns, "db", 3)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		fc := newFakeCluster(3, false)
		defer fc.stop()
		addr := func(id int32) string { return fc.members[uint32(id)].addr() }
		startPods(ctx, c, []int32{1, 2, 3}, "rev1", addr)
		Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))

		replicas := func() int32 {
			sts := &appsv1.StatefulSet{}
			Expect(k8s.Get(ctx, byKey(ns, "db"), sts)).To(Succeed())
			return *sts.Spec.Replicas
		}
		members := func() int {
			return len(fc.status(uint32(fc.leader())).GetMembers())
		}

		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
			c.Spec.Replicas = 5
		})).To(Succeed())
		for _, id := range []int32{4, 5} {
			Eventually(replicas).Should(Equal(id), "one more pod")
			cm := &corev1.ConfigMap{}
			Expect(k8s.Get(ctx, byKey(ns, "db-config"), cm)).To(Succeed())
			Expect(cm.Data[specs.KeyPeers]).To(ContainSubstring("db-%d.", id), "the new pod starts knowing itself")
			Consistently(members, "1s").Should(Equal(int(id-1)), "the membership waits for the new member to answer")
			m := fc.add(uint32(id))
			startPods(ctx, c, []int32{id}, "rev1", func(int32) string { return m.addr() })
			Eventually(members).Should(Equal(int(id)))
		}
		Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))

		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
			c.Spec.Replicas = 3
		})).To(Succeed())
		Eventually(members).Should(Equal(3))
		Eventually(replicas).Should(Equal(int32(3)), "pods stop only after the membership no longer has them")
		Expect(fc.total("ChangeMembership")).To(Equal(4), "one member per change")
		Eventually(eventReasons(ctx, c)).Should(ContainElements(ReasonScaling, ReasonMembershipChanged))
	})

	It("says why it cannot scale when the members cannot change their membership", func() {
		ctx := context.Background()
		ns := newNamespace(ctx)
		c := newCluster(ns, "db", 1)
		c.Spec.Failover.Timeout = &metav1.Duration{Duration: 10 * time.Second} // the backoff base
		Expect(k8s.Create(ctx, c)).To(Succeed())
		fc := newFakeCluster(1, false)
		defer fc.stop()
		startPods(ctx, c, []int32{1}, "rev1", func(int32) string { return fc.members[1].addr() })
		Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
		m := fc.add(2)
		fc.mu.Lock()
		fc.unimplemented = true // from now on, like a rolisd without replication
		fc.mu.Unlock()

		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
			c.Spec.Replicas = 3
		})).To(Succeed())
		startPods(ctx, c, []int32{2}, "rev1", func(int32) string { return m.addr() })
		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(And(
			HavePrefix("True/"+ReasonMembershipChangeUnsupported), ContainSubstring("UNIMPLEMENTED to ChangeMembership")))
		Consistently(func() int { return fc.total("ChangeMembership") }, "3s").Should(Equal(1), "backoff, no hot loop")
	})
})
