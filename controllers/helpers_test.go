/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"strconv"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// plaintextTLS opts a test cluster out of the default TLS: its members are
// plaintext processes on loopback (the TLS specs set spec.tls themselves).
func plaintextTLS() *dbv1.TLSSpec { return &dbv1.TLSSpec{Enabled: ptr.To(false)} }

func newCluster(ns, name string, replicas int32) *dbv1.RolisCluster {
	return &dbv1.RolisCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       dbv1.RolisClusterSpec{Replicas: replicas, Image: "rolis/rolisd:test", TLS: plaintextTLS()},
	}
}

// updateCluster changes the spec the way a user would, retrying when the
// operator wrote the status in between.
func updateCluster(ctx context.Context, c *dbv1.RolisCluster, mutate func(c *dbv1.RolisCluster)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &dbv1.RolisCluster{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
			return err
		}
		mutate(cur)
		return k8s.Update(ctx, cur)
	})
}

func getCluster(ctx context.Context, c *dbv1.RolisCluster) *dbv1.RolisCluster {
	out := &dbv1.RolisCluster{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(c), out)).To(Succeed())
	return out
}

// condition returns a cluster condition as "Status/Reason: Message" for
// readable failures.
func condition(ctx context.Context, c *dbv1.RolisCluster, t string) func() string {
	return func() string {
		cur := &dbv1.RolisCluster{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
			return err.Error()
		}
		cond := meta.FindStatusCondition(cur.Status.Conditions, t)
		if cond == nil {
			return "absent"
		}
		return fmt.Sprintf("%s/%s: %s", cond.Status, cond.Reason, cond.Message)
	}
}

// startPods plays the StatefulSet controller and the kubelet: it creates the
// member pods of ids 1..n as the StatefulSet would (template labels, the
// pod-index and revision labels), marks them ready, and registers the
// process that answers each pod's admin API.
func startPods(ctx context.Context, c *dbv1.RolisCluster, ids []int32, revision string, addr func(id int32) string) {
	for _, id := range ids {
		startPod(ctx, c, id, revision)
		if addr != nil {
			processes.set(c.Namespace, c.Name, id, addr(id))
		}
	}
}

func startPod(ctx context.Context, c *dbv1.RolisCluster, id int32, revision string) {
	createPod(ctx, c, id, revision, corev1.ConditionTrue)
}

// createPod makes member id's pod as the StatefulSet would and reports it
// running, with its Ready condition `ready`.
func createPod(ctx context.Context, c *dbv1.RolisCluster, id int32, revision string, ready corev1.ConditionStatus) {
	sts := &appsv1.StatefulSet{}
	EventuallyWithOffset(3, func() error {
		return k8s.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.StatefulSetName(c)}, sts)
	}).Should(Succeed())
	labels := map[string]string{}
	for k, v := range sts.Spec.Template.Labels {
		labels[k] = v
	}
	labels[specs.LabelPodIndex] = strconv.Itoa(int(id))
	labels[appsv1.ControllerRevisionHashLabelKey] = revision
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: specs.PodName(c, id), Namespace: c.Namespace, Labels: labels,
			Annotations: sts.Spec.Template.Annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "rolisd", Image: c.Spec.Image}}},
	}
	ExpectWithOffset(3, k8s.Create(ctx, pod)).To(Succeed())
	// A merge patch, not an update: the operator may label the new pod
	// before the kubelet (the test) reports it running.
	created := pod.DeepCopy()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Now()},
	}}
	ExpectWithOffset(3, k8s.Status().Patch(ctx, pod, client.MergeFrom(created))).To(Succeed())
}

func podRoles(ctx context.Context, c *dbv1.RolisCluster) func() map[string]string {
	return func() map[string]string {
		pods := &corev1.PodList{}
		Expect(k8s.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(specs.SelectorLabels(c)))).To(Succeed())
		out := map[string]string{}
		for _, p := range pods.Items {
			out[p.Name] = p.Labels[specs.LabelRole]
		}
		return out
	}
}

// readServicePods lists the pods the read Service selects, as its
// EndpointSlice controller would (envtest runs none): the cluster's pods
// that carry every label of the Service's selector.
func readServicePods(ctx context.Context, c *dbv1.RolisCluster) func() []string {
	return func() []string {
		svc := &corev1.Service{}
		Expect(k8s.Get(ctx, byKey(c.Namespace, specs.ReadServiceName(c)), svc)).To(Succeed())
		Expect(svc.Spec.Selector).NotTo(BeEmpty())
		pods := &corev1.PodList{}
		Expect(k8s.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(svc.Spec.Selector))).To(Succeed())
		out := []string{}
		for _, p := range pods.Items {
			out = append(out, p.Name)
		}
		return out
	}
}

// eventReasons lists the reasons of the events about a cluster.
func eventReasons(ctx context.Context, c *dbv1.RolisCluster) func() []string {
	return func() []string {
		evs := &eventsv1.EventList{}
		Expect(k8s.List(ctx, evs, client.InNamespace(c.Namespace))).To(Succeed())
		var out []string
		for _, e := range evs.Items {
			if e.Regarding.Name == c.Name && e.Regarding.Kind == "RolisCluster" {
				out = append(out, e.Reason)
			}
		}
		return out
	}
}

func eventNotes(ctx context.Context, c *dbv1.RolisCluster, reason string) []string {
	evs := &eventsv1.EventList{}
	Expect(k8s.List(ctx, evs, client.InNamespace(c.Namespace))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Name == c.Name && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

func byKey(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
