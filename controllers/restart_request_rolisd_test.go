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

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
	"github.com/rolisdb/rolis/internal/testserver"
)

// restartingKubelet plays the StatefulSet controller and the kubelet for
// pods the operator deletes: it stops the member's rolisd, starts it again
// (empty: durability memory) and makes the pod anew at revision rev. It
// returns the pods in the order they went, and a stop function.
func restartingKubelet(ctx context.Context, c *dbv1.RolisCluster, procs *testserver.Cluster, rev func() string) (func() []string, func()) {
	var mu sync.Mutex
	var deleted []string
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for _, id := range specs.MemberIDs(3) {
				name := specs.PodName(c, id)
				if !apierrors.IsNotFound(k8s.Get(ctx, byKey(c.Namespace, name), &corev1.Pod{})) {
					continue
				}
				mu.Lock()
				deleted = append(deleted, name)
				mu.Unlock()
				m := procs.Member(int(id))
				_, _ = m.Stop(10 * time.Second) // its exit status says nothing here
				Expect(m.Restart(30*time.Second)).To(Succeed(), "%s restarts", name)
				startProbedPod(ctx, c, m, rev())
			}
		}
	}()
	return func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string{}, deleted...)
		}, func() {
			close(stop)
			<-done
		}
}

var _ = Describe("Restart requests against real rolisd processes", Label("rolisd"), func() {
	It("rolis.io/restartedAt restarts followers, switches over, then restarts the old leader, losing no acknowledged transaction", func() {
		ctx := context.Background()
		c, procs, first, epoch := startRealCluster(ctx)
		setRevision(ctx, c.Namespace, "rev1")
		Eventually(condition(ctx, c, dbv1.ConditionReady), "60s").Should(HavePrefix("True/"))
		w := startLedgerLoad(ctx, procs.ClientAddrs(), 53)
		Eventually(w.Acked, "20s").Should(BeNumerically(">", 50))
		deletions, stop := restartingKubelet(ctx, c, procs, func() string { return "rev2" })
		defer stop()

		annotate(ctx, c, dbv1.AnnotationRestartedAt, "2026-01-02T03:04:05Z")
		Eventually(func() string {
			sts := &appsv1.StatefulSet{}
			Expect(k8s.Get(ctx, byKey(c.Namespace, specs.StatefulSetName(c)), sts)).To(Succeed())
			return sts.Spec.Template.Annotations[dbv1.AnnotationRestartedAt]
		}).Should(Equal("2026-01-02T03:04:05Z"), "the request goes into the pod template: a new revision")
		setRevision(ctx, c.Namespace, "rev2")

		Eventually(deletions, "180s").Should(HaveLen(3))
		old := specs.PodName(c, int32(first))
		Expect(deletions()[2]).To(Equal(old), "followers first, the old leader last")
		Eventually(condition(ctx, c, dbv1.ConditionReady), "90s").Should(HavePrefix("True/"))
		last := getCluster(ctx, c).Status.LastSwitchover
		Expect(last).NotTo(BeNil())
		Expect(last.From).To(Equal(old))
		Expect(last.Reason).To(Equal(SwitchoverRestart))
		Expect(last.Epoch).To(BeNumerically(">", int64(epoch)))
		acked := w.Acked()
		Eventually(w.Acked, "30s").Should(BeNumerically(">", acked+20), "writes go on after the restart")
		checkLedgerOnLeader(ctx, c, procs, w)
	})

	It("rolis.io/restartMember restarts only the member it names, the leader after a switchover", func() {
		ctx := context.Background()
		c, procs, first, _ := startRealCluster(ctx)
		setRevision(ctx, c.Namespace, "rev1")
		Eventually(condition(ctx, c, dbv1.ConditionReady), "60s").Should(HavePrefix("True/"))
		w := startLedgerLoad(ctx, procs.ClientAddrs(), 59)
		Eventually(w.Acked, "20s").Should(BeNumerically(">", 50))
		deletions, stop := restartingKubelet(ctx, c, procs, func() string { return "rev1" })
		defer stop()

		By("a request naming no member is dropped")
		annotate(ctx, c, dbv1.AnnotationRestartMember, "db-0")
		Eventually(annotation(ctx, c, dbv1.AnnotationRestartMember)).Should(BeEmpty())
		Expect(deletions()).To(BeEmpty())

		By("restart the leader")
		old := specs.PodName(c, int32(first))
		annotate(ctx, c, dbv1.AnnotationRestartMember, old)
		Eventually(deletions, "90s").Should(Equal([]string{old}))
		Eventually(annotation(ctx, c, dbv1.AnnotationRestartMember)).Should(BeEmpty(), "cleared once the pod is deleted")
		Expect(epochRecord(ctx, c.Namespace)().GetLeaderId()).NotTo(Equal(first), "switched over before the restart")
		Eventually(condition(ctx, c, dbv1.ConditionReady), "90s").Should(HavePrefix("True/"))
		Consistently(deletions, "3s").Should(Equal([]string{old}), "only that member restarts, once")
		Expect(getCluster(ctx, c).Status.LastSwitchover.Reason).To(Equal(SwitchoverRestart))
		checkLedgerOnLeader(ctx, c, procs, w)
	})
})
