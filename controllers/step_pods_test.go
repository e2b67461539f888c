/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// drainEvents returns the events recorded so far.
func drainEvents(e *unitEnv) []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestACrashLoopingPodIsDegradedWithOneWarningPerState(t *testing.T) {
	g := NewWithT(t)
	e := newUnitEnv(t, 3, followers(3), interceptor.Funcs{})
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	e.r.Now = func() time.Time { return now }
	setPod2 := func(ready bool, cs corev1.ContainerStatus) {
		p := &corev1.Pod{}
		g.Expect(e.c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "db-2"}, p)).To(Succeed())
		cs.Name = specs.ContainerRun
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		g.Expect(e.c.Status().Update(context.Background(), p)).To(Succeed())
	}
	crashLooping := func(restarts int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				Message: "--batch-timeout: 500us is below the minimum of 1ms", FinishedAt: metav1.NewTime(now.Add(-time.Second))}}}
	}
	warnings := func() []string {
		var out []string
		for _, ev := range drainEvents(e) {
			if strings.HasPrefix(ev, "Warning "+ReasonPodCrashLooping) {
				out = append(out, ev)
			}
		}
		return out
	}

	setPod2(false, crashLooping(3))
	for i := 0; i < 3; i++ {
		_, err := e.reconcile(t)
		g.Expect(err).NotTo(HaveOccurred())
	}
	cond := e.condition(t, dbv1.ConditionDegraded)
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond.Reason).To(Equal(ReasonPodCrashLooping))
	g.Expect(cond.Message).To(And(ContainSubstring("pod db-2"), ContainSubstring("500us is below the minimum")))
	got := warnings()
	g.Expect(got).To(HaveLen(1), "three reconciles of one state, one event")
	g.Expect(got[0]).To(ContainSubstring("pod db-2: container rolisd is crash-looping (3 restarts); last exit code 1 (Error): --batch-timeout"))

	setPod2(false, crashLooping(4))
	_, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(warnings()).To(BeEmpty(), "another restart of the same crash loop is the same state")
	g.Expect(e.condition(t, dbv1.ConditionDegraded).Message).To(ContainSubstring("(4 restarts)"), "the condition is current")

	setPod2(true, corev1.ContainerStatus{Ready: true, RestartCount: 4, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.condition(t, dbv1.ConditionDegraded).Reason).NotTo(Equal(ReasonPodCrashLooping))

	setPod2(false, crashLooping(5))
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(warnings()).To(HaveLen(1), "back after the pod was ready: a new event")
}
