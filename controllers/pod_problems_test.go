/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodProblemsNameThePodTheReasonAndTheLastTermination(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	pod := func(mutate func(p *corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "db-2", Namespace: "ns", CreationTimestamp: ago(time.Hour)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "rolisd", Image: "rolis/rolisd:9.9"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
		mutate(p)
		return p
	}
	container := func(cs corev1.ContainerStatus) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			cs.Name = "rolisd"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		}
	}
	waiting := func(reason, msg string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
	terminated := func(reason string, code int32, msg string, finished time.Duration) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, Message: msg, FinishedAt: ago(finished)}}
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Second)}}
	pending := func(reason, msg string, since time.Duration) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: reason, Message: msg, LastTransitionTime: ago(since)}}
		}
	}
	badFlag := "rolisd: --batch-timeout: 500us is below the minimum of 1ms\nRun with --help for more information.\n"

	cases := []struct {
		name   string
		pod    *corev1.Pod
		reason string // "" = no problem
		says   []string
	}{
		{"a running, ready container", pod(container(corev1.ContainerStatus{Ready: true, State: running})), "", nil},
		{"a container in CrashLoopBackOff after refusing a flag",
			pod(container(corev1.ContainerStatus{RestartCount: 5, State: waiting("CrashLoopBackOff", "back-off 2m40s restarting failed container"),
				LastTerminationState: terminated("Error", 1, badFlag, 10*time.Second)})),
			ReasonPodCrashLooping, []string{"pod db-2", "container rolisd is crash-looping", "(5 restarts)",
				"last exit code 1 (Error): rolisd: --batch-timeout: 500us is below the minimum of 1ms | Run with --help"}},
		{"a crash-looping container seen running between back-offs",
			pod(container(corev1.ContainerStatus{RestartCount: 3, State: running, LastTerminationState: terminated("Error", 1, badFlag, 5*time.Second)})),
			ReasonPodCrashLooping, []string{"pod db-2", "crash-looping", "500us is below"}},
		{"a container that restarted once and is starting again",
			pod(container(corev1.ContainerStatus{RestartCount: 1, State: running, LastTerminationState: terminated("Error", 137, "", 5*time.Second)})),
			"", nil},
		{"a container restarted twice long ago and ready",
			pod(container(corev1.ContainerStatus{Ready: true, RestartCount: 2, State: running, LastTerminationState: terminated("Error", 1, "", time.Hour)})),
			"", nil},
		{"an image that cannot be pulled",
			pod(container(corev1.ContainerStatus{State: waiting("ErrImagePull", `failed to pull image "rolis/rolisd:9.9": not found`)})),
			ReasonImagePullFailed, []string{"pod db-2", "cannot pull image rolis/rolisd:9.9", "ErrImagePull: failed to pull", "not found"}},
		{"an image pull in back-off",
			pod(container(corev1.ContainerStatus{State: waiting("ImagePullBackOff", `Back-off pulling image "rolis/rolisd:9.9"`)})),
			ReasonImagePullFailed, []string{"pod db-2", "ImagePullBackOff", "Back-off pulling image"}},
		{"a container whose config cannot be made",
			pod(container(corev1.ContainerStatus{State: waiting("CreateContainerConfigError", `secret "db-server-tls" not found`)})),
			ReasonContainerNotCreated, []string{"pod db-2", "CreateContainerConfigError", `secret "db-server-tls" not found`}},
		{"a container OOM-killed now",
			pod(container(corev1.ContainerStatus{RestartCount: 1, State: terminated("OOMKilled", 137, "", 0)})),
			ReasonPodOOMKilled, []string{"pod db-2", "was OOM-killed"}},
		{"a container crash-looping on OOM kills",
			pod(container(corev1.ContainerStatus{RestartCount: 4, State: waiting("CrashLoopBackOff", ""), LastTerminationState: terminated("OOMKilled", 137, "", 10*time.Second)})),
			ReasonPodOOMKilled, []string{"pod db-2", "OOM kills", "resources.limits.memory"}},
		{"a container running again after a recent OOM kill",
			pod(container(corev1.ContainerStatus{Ready: true, RestartCount: 1, State: running, LastTerminationState: terminated("OOMKilled", 137, "", 2*time.Minute)})),
			ReasonPodOOMKilled, []string{"pod db-2", "was OOM-killed at 2026-11-22T08:58:00Z"}},
		{"a container running long after an OOM kill",
			pod(container(corev1.ContainerStatus{Ready: true, RestartCount: 1, State: running, LastTerminationState: terminated("OOMKilled", 137, "", time.Hour)})),
			"", nil},
		{"a pod no node can take",
			pod(pending("Unschedulable", "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.", time.Minute)),
			ReasonPodUnschedulable, []string{"pod db-2 cannot be scheduled: 0/3 nodes are available: 3 Insufficient memory"}},
		{"a pod whose volume is not bound",
			pod(pending("Unschedulable", "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.", time.Minute)),
			ReasonVolumeNotBound, []string{"pod db-2 waits for its volume", "unbound immediate PersistentVolumeClaims"}},
		{"a pod whose volume cannot be provisioned",
			pod(pending("SchedulerError", `running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded`, time.Minute)),
			ReasonVolumeNotBound, []string{"pod db-2 waits for its volume", "VolumeBinding"}},
		{"a pod unscheduled for a moment only", pod(pending("Unschedulable", "pod has unbound immediate PersistentVolumeClaims", 5*time.Second)), "", nil},
		{"a pod being deleted", pod(func(p *corev1.Pod) {
			container(corev1.ContainerStatus{State: waiting("CrashLoopBackOff", "")})(p)
			p.DeletionTimestamp = ptrTime(ago(time.Second))
		}), "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := podProblems([]*corev1.Pod{tc.pod}, now)
			if tc.reason == "" {
				if len(got) != 0 {
					t.Fatalf("want no problem, got %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one problem %s, got %+v", tc.reason, got)
			}
			if got[0].reason != tc.reason || got[0].pod != "db-2" {
				t.Errorf("reason %s for pod %s, want %s for db-2", got[0].reason, got[0].pod, tc.reason)
			}
			for _, s := range tc.says {
				if !strings.Contains(got[0].message, s) {
					t.Errorf("message %q does not say %q", got[0].message, s)
				}
			}
			if len(got[0].message) > 900 {
				t.Errorf("message of %d bytes does not fit an event's note", len(got[0].message))
			}
		})
	}
}

func TestPodProblemsKeepTheStateKeyAcrossRestartsAndSortByPod(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	crashing := func(name string, restarts int32) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "rolisd", RestartCount: restarts, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "no"}},
		}}}}
	}
	a := podProblems([]*corev1.Pod{crashing("db-3", 4), crashing("db-1", 4)}, now)
	b := podProblems([]*corev1.Pod{crashing("db-1", 5)}, now)
	if len(a) != 2 || a[0].pod != "db-1" || a[1].pod != "db-3" {
		t.Fatalf("want db-1 then db-3, got %+v", a)
	}
	if a[0].message == b[0].message || a[0].key != b[0].key {
		t.Errorf("another restart changes the message (%q, %q) but not the key (%q, %q)", a[0].message, b[0].message, a[0].key, b[0].key)
	}
}

func TestOneLineKeepsTheEndOfALongMessage(t *testing.T) {
	long := strings.Repeat("é", 500) + "\nthe reason\n"
	got := oneLine(long)
	if !strings.HasSuffix(got, " | the reason") || !strings.HasPrefix(got, "...") || len(got) > maxTerminationMessage+3 {
		t.Errorf("oneLine = %q (%d bytes)", got, len(got))
	}
	if !strings.HasPrefix(strings.TrimPrefix(got, "..."), "é") {
		t.Errorf("cut inside a UTF-8 sequence: %q", got[:8])
	}
}

func TestAnImagePullInAndOutOfBackOffIsOneState(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	pulling := func(reason, msg string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-1"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "rolisd", Image: "rolis/rolisd:nope"}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "rolisd",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}}}
	}
	a := podProblems([]*corev1.Pod{pulling("ErrImagePull", "rpc error: not found")}, now)
	b := podProblems([]*corev1.Pod{pulling("ImagePullBackOff", `Back-off pulling image "rolis/rolisd:nope"`)}, now)
	if len(a) != 1 || len(b) != 1 || a[0].key != b[0].key || a[0].message == b[0].message {
		t.Errorf("want one state with two messages, got %+v and %+v", a, b)
	}
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }
