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
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

var _ = Describe("Rolling out a revision whose pods cannot run", func() {
	It("stops at the first broken pod, says why, and replaces it once the spec is repaired", func() {
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
		good := c.Spec.Image

		// Play the StatefulSet controller and the kubelet: a deleted pod
		// comes back at the update revision; at "broken" its process never
		// starts and the kubelet reports the image missing.
		var mu sync.Mutex
		var deleted []string
		revision := "rev1"
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
				for _, id := range []int32{1, 2, 3} {
					if err := k8s.Get(ctx, byKey(ns, specs.PodName(c, id)), &corev1.Pod{}); !apierrors.IsNotFound(err) {
						continue
					}
					mu.Lock()
					deleted = append(deleted, specs.PodName(c, id))
					rev := revision
					mu.Unlock()
					m := fc.members[uint32(id)]
					if rev == "broken" {
						m.kill()
						startPod(ctx, c, id, rev)
						p := &corev1.Pod{}
						Expect(k8s.Get(ctx, byKey(ns, specs.PodName(c, id)), p)).To(Succeed())
						before := p.DeepCopy()
						p.Status.Phase = corev1.PodPending
						p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
						p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: specs.ContainerRun, Image: "rolis/rolisd:missing",
							State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull",
								Message: `Container image "rolis/rolisd:missing" is not present with pull policy of Never`}}}}
						Expect(k8s.Status().Patch(ctx, p, client.MergeFrom(before))).To(Succeed())
						continue
					}
					fc.mu.Lock()
					up := m.up
					fc.mu.Unlock()
					if !up {
						m.start("127.0.0.1:0")
					}
					startPods(ctx, c, []int32{id}, rev, func(int32) string { return m.addr() })
				}
			}
		}()
		deletions := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string{}, deleted...)
		}
		roll := func(image, rev string) {
			GinkgoHelper()
			Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) { c.Spec.Image = image })).To(Succeed())
			Eventually(func() string {
				sts := &appsv1.StatefulSet{}
				Expect(k8s.Get(ctx, byKey(ns, "db"), sts)).To(Succeed())
				return sts.Spec.Template.Spec.Containers[0].Image
			}).Should(Equal(image))
			mu.Lock()
			revision = rev
			mu.Unlock()
			setRevision(ctx, ns, rev)
		}

		By("an image that does not exist: the first follower restarted cannot run")
		roll("rolis/rolisd:missing", "broken")
		Eventually(condition(ctx, c, dbv1.ConditionDegraded), "30s").Should(
			And(HavePrefix("True/"+ReasonImagePullFailed), ContainSubstring("pod db-3")))
		Eventually(condition(ctx, c, dbv1.ConditionProgressing)).Should(ContainSubstring("waiting for db-3 to come back"))
		Consistently(deletions, "3s").Should(Equal([]string{"db-3"}), "the rollout stops at the first broken pod")
		Expect(condition(ctx, c, dbv1.ConditionAvailable)()).To(HavePrefix("True/"), "the leader and a majority serve on")

		By("the spec repaired: the StatefulSet's revision is the first again, and only the broken pod is replaced")
		roll(good, "rev1")
		Eventually(deletions, "30s").Should(Equal([]string{"db-3", "db-3"}))
		Eventually(condition(ctx, c, dbv1.ConditionReady), "30s").Should(HavePrefix("True/"))
		Expect(condition(ctx, c, dbv1.ConditionDegraded)()).To(HavePrefix("False/"))
		Consistently(deletions, "2s").Should(HaveLen(2), "the members on the repaired revision are not restarted")
		Expect(epochRecord(ctx, ns)().GetEpoch()).To(Equal(uint64(1)), "no switchover, no failover")
		close(stop)
		<-done
	})
})
