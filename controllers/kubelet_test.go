/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
	"github.com/rolisdb/rolis/internal/testserver"
)

// envtest runs no kubelet and no StatefulSet controller; these helpers do
// what they would do to a member's pod and process.

// kubeletFinalizer keeps a deleted pod's object while the test plays the
// kubelet's graceful shutdown, as a grace period would.
const kubeletFinalizer = "test.rolis.io/kubelet"

// deleteMemberPod deletes member m's pod as `kubectl delete pod` would and,
// as the kubelet, sends its rolisd SIGTERM (rolisd then runs out its
// --shutdown-grace). The pod object stays, with a deletionTimestamp, until
// recreateMember. It returns the time of the deletion.
func deleteMemberPod(ctx context.Context, c *dbv1.RolisCluster, m *testserver.Member) time.Time {
	GinkgoHelper()
	p := &corev1.Pod{}
	Expect(k8s.Get(ctx, byKey(c.Namespace, specs.PodName(c, int32(m.ID))), p)).To(Succeed())
	patch := client.MergeFrom(p.DeepCopy())
	controllerutil.AddFinalizer(p, kubeletFinalizer)
	Expect(k8s.Patch(ctx, p, patch)).To(Succeed())
	at := time.Now()
	Expect(k8s.Delete(ctx, p)).To(Succeed())
	Expect(m.Signal(syscall.SIGTERM)).To(Succeed())
	return at
}

// recreateMember waits for m's process to end (killing it after 10 s),
// lets the pod object go, makes a new pod as the StatefulSet would and
// starts rolisd in it, empty; the pod turns Ready on /readyz (readyOnReadyz).
func recreateMember(ctx context.Context, c *dbv1.RolisCluster, m *testserver.Member) {
	GinkgoHelper()
	_, _ = m.Stop(10 * time.Second) // the exit status of a stopped member says nothing here
	name := specs.PodName(c, int32(m.ID))
	p := &corev1.Pod{}
	if err := k8s.Get(ctx, byKey(c.Namespace, name), p); err == nil {
		patch := client.MergeFrom(p.DeepCopy())
		controllerutil.RemoveFinalizer(p, kubeletFinalizer)
		Expect(k8s.Patch(ctx, p, patch)).To(Succeed())
	}
	Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, byKey(c.Namespace, name), &corev1.Pod{}))
	}).Should(BeTrue(), "pod %s goes", name)
	createPod(ctx, c, int32(m.ID), "rev1", corev1.ConditionFalse)
	Expect(m.Restart(30*time.Second)).To(Succeed(), "%s restarts empty", name)
	readyOnReadyz(ctx, c, m)
}

// startProbedPod makes member m's pod as the StatefulSet would, not Ready,
// and then plays its readiness probe (readyOnReadyz).
func startProbedPod(ctx context.Context, c *dbv1.RolisCluster, m *testserver.Member, revision string) {
	GinkgoHelper()
	createPod(ctx, c, int32(m.ID), revision, corev1.ConditionFalse)
	readyOnReadyz(ctx, c, m)
}

// readyOnReadyz turns member m's pod Ready once rolisd's /readyz answers
// 200 (within 2 minutes), as the kubelet's readiness probe does on a real
// cluster. A member still catching up by state transfer is not ready, and
// a rollout must wait for it: marking the pod Ready once rolisd merely
// served let two members be restarted while one still caught up.
func readyOnReadyz(ctx context.Context, c *dbv1.RolisCluster, m *testserver.Member) {
	GinkgoHelper()
	name := specs.PodName(c, int32(m.ID))
	from := time.Now()
	Eventually(func() (string, error) {
		code, body, err := m.MetricsGet(ctx, "/readyz")
		return fmt.Sprintf("HTTP %d: %s", code, strings.TrimSpace(string(body))), err
	}).WithTimeout(2*time.Minute).WithPolling(100*time.Millisecond).Should(HavePrefix("HTTP 200"), "%s/readyz", name)
	p := &corev1.Pod{}
	Expect(k8s.Get(ctx, byKey(c.Namespace, name), p)).To(Succeed())
	patch := client.MergeFrom(p.DeepCopy())
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	Expect(k8s.Status().Patch(ctx, p, patch)).To(Succeed())
	fmt.Fprintf(GinkgoWriter, "%s Ready: /readyz answered 200 after %v\n", name, time.Since(from).Round(time.Millisecond))
}

// memberRole is the role the operator reports for member id.
func memberRole(ctx context.Context, c *dbv1.RolisCluster, id int) func() string {
	return func() string {
		for _, m := range getCluster(ctx, c).Status.Members {
			if m.ID == int32(id) {
				return m.Role
			}
		}
		return "absent"
	}
}

// notesSince lists the notes of the cluster's events of reason made at or
// after t.
func notesSince(ctx context.Context, c *dbv1.RolisCluster, reason string, t time.Time) []string {
	GinkgoHelper()
	evs := &eventsv1.EventList{}
	Expect(k8s.List(ctx, evs, client.InNamespace(c.Namespace))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		at := e.EventTime.Time
		if e.Series != nil {
			at = e.Series.LastObservedTime.Time
		}
		if e.Regarding.Name == c.Name && e.Reason == reason && !at.Before(t) {
			out = append(out, e.Note)
		}
	}
	return out
}
