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
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// Member pods that cannot run are Degraded with the kubelet's or the
// scheduler's reason and a Warning event naming the pod, once per state.
// The test writes the pod status as the kubelet and the scheduler would.
var _ = Describe("Member pods that cannot run", func() {
	var (
		ctx context.Context
		ns  string
		c   *dbv1.RolisCluster
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
		c = newCluster(ns, "db", 3)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		startPods(ctx, c, []int32{1, 2, 3}, "rev1", nil)
		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(HavePrefix("False/AsExpected"))
	})

	// report writes member 2's status as the kubelet or the scheduler would.
	report := func(mutate func(st *corev1.PodStatus)) {
		GinkgoHelper()
		p := &corev1.Pod{}
		Expect(k8s.Get(ctx, byKey(ns, specs.PodName(c, 2)), p)).To(Succeed())
		before := p.DeepCopy()
		mutate(&p.Status)
		Expect(k8s.Status().Patch(ctx, p, client.MergeFrom(before))).To(Succeed())
	}
	// warnings are member 2's Warning events about the cluster with reason.
	warnings := func(reason string) func() []eventsv1.Event {
		return func() []eventsv1.Event {
			evs := &eventsv1.EventList{}
			Expect(k8s.List(ctx, evs, client.InNamespace(ns))).To(Succeed())
			var out []eventsv1.Event
			for _, e := range evs.Items {
				if e.Regarding.Name == c.Name && e.Reason == reason && e.Type == corev1.EventTypeWarning &&
					e.Related != nil && e.Related.Name == "db-2" {
					out = append(out, e)
				}
			}
			return out
		}
	}
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(time.Now().Add(-d).Truncate(time.Second)) }
	notReady := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: ago(0)}
	container := func(cs corev1.ContainerStatus) func(st *corev1.PodStatus) {
		return func(st *corev1.PodStatus) {
			cs.Name, cs.Image = specs.ContainerRun, c.Spec.Image
			st.ContainerStatuses = []corev1.ContainerStatus{cs}
			st.Conditions = []corev1.PodCondition{notReady}
		}
	}

	DescribeTable("says which pod, why, and what the container last said",
		func(status func(st *corev1.PodStatus), reason string, says ...string) {
			report(status)
			Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(HavePrefix("True/" + reason))
			cond := condition(ctx, c, dbv1.ConditionDegraded)()
			Expect(cond).To(ContainSubstring("pod db-2"))
			for _, s := range says {
				Expect(cond).To(ContainSubstring(s))
			}
			Expect(getCluster(ctx, c).Status.Phase).To(Equal(dbv1.PhaseDegraded), "not Creating")

			Eventually(warnings(reason)).Should(HaveLen(1))
			ev := warnings(reason)()[0]
			Expect(ev.Note).To(ContainSubstring("pod db-2"))
			for _, s := range says {
				Expect(ev.Note).To(ContainSubstring(s))
			}
			// The status is reconciled every second (failover.timeout / 3);
			// the same state makes no second event (an event series would
			// start with a repeat).
			Consistently(func() *eventsv1.EventSeries { return warnings(reason)()[0].Series }, "3s").Should(BeNil(),
				"one event per state, not one per reconcile")
			Expect(warnings(reason)()).To(HaveLen(1))
		},
		Entry("crash-looping: rolisd refuses a flag",
			container(corev1.ContainerStatus{RestartCount: 4,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
					Message: "back-off 1m20s restarting failed container=rolisd"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1,
					FinishedAt: ago(5 * time.Second),
					Message:    "--batch-timeout: 500us is below the minimum of 1ms\nRun with --help for more information.\n"}}}),
			ReasonPodCrashLooping, "crash-looping", "last exit code 1 (Error)", "--batch-timeout: 500us is below the minimum of 1ms"),
		Entry("the image cannot be pulled",
			container(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
				Message: `Back-off pulling image "rolis/rolisd:test": not found`}}}),
			ReasonImagePullFailed, "cannot pull image rolis/rolisd:test", "ImagePullBackOff: Back-off pulling image", "not found"),
		Entry("OOM-killed",
			container(corev1.ContainerStatus{RestartCount: 2,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137,
					FinishedAt: ago(5 * time.Second)}}}),
			ReasonPodOOMKilled, "OOM kills", "resources.limits.memory"),
		Entry("Pending: no node can take it",
			func(st *corev1.PodStatus) {
				st.Phase = corev1.PodPending
				st.ContainerStatuses = nil
				st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
					LastTransitionTime: ago(time.Minute),
					Message:            "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."}}
			},
			ReasonPodUnschedulable, "cannot be scheduled", "3 Insufficient memory"),
		Entry("Pending: its volume is not bound",
			func(st *corev1.PodStatus) {
				st.Phase = corev1.PodPending
				st.ContainerStatuses = nil
				st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
					LastTransitionTime: ago(time.Minute),
					Message:            "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."}}
			},
			ReasonVolumeNotBound, "waits for its volume", "unbound immediate PersistentVolumeClaims"),
	)

	It("clears the condition when the pod runs again, and reports the same problem again when it comes back", func() {
		crashLoop := container(corev1.ContainerStatus{RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 2,
				FinishedAt: ago(time.Second), Message: "bad flag"}}})
		report(crashLoop)
		Eventually(warnings(ReasonPodCrashLooping)).Should(HaveLen(1))

		report(func(st *corev1.PodStatus) {
			st.ContainerStatuses = []corev1.ContainerStatus{{Name: specs.ContainerRun, Ready: true, RestartCount: 3,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(0)}}}}
			st.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ago(0)}}
		})
		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(HavePrefix("False/AsExpected"))
		Expect(getCluster(ctx, c).Status.Phase).NotTo(Equal(dbv1.PhaseDegraded))

		report(crashLoop)
		// The pod (the event's related object) has another resourceVersion
		// now, so the event is a new object rather than a series.
		Eventually(warnings(ReasonPodCrashLooping)).Should(HaveLen(2), "the problem came back after the pod was ready: reported again")
		// The event is sent during the reconcile, the status written at its
		// end: on a loaded machine the event can be seen first.
		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(HavePrefix("True/" + ReasonPodCrashLooping))
	})
})
