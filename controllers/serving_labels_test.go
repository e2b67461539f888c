/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"slices"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rolisdb/rolis/controllers/specs"
)

var _ = Describe("The serving label of member pods", func() {
	It("puts new pods and pods made without it into the read Service, and keeps a role=fenced pod out", func() {
		ctx := context.Background()
		ns := newNamespace(ctx)
		c := newCluster(ns, "db", 3)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		// No process answers: no leader, so only the serving labels step
		// labels the pods.
		startPods(ctx, c, []int32{1, 2, 3}, "rev1", nil)
		all := []string{specs.PodName(c, 1), specs.PodName(c, 2), specs.PodName(c, 3)}
		Eventually(readServicePods(ctx, c)).Should(ConsistOf(all), "pods the StatefulSet creates join the read Service")

		By("pods as an operator without the label left them: no serving label, one labelled role=fenced")
		unlabel := func(id int32, role string) {
			GinkgoHelper()
			patch := `{"metadata":{"labels":{"` + specs.LabelServing + `":null}}}`
			if role != "" {
				patch = `{"metadata":{"labels":{"` + specs.LabelServing + `":null,"` + specs.LabelRole + `":"` + role + `"}}}`
			}
			p := &corev1.Pod{}
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: specs.PodName(c, id)}, p)).To(Succeed())
			Expect(k8s.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		}
		unlabel(1, "")
		unlabel(3, specs.RoleFenced)
		Eventually(readServicePods(ctx, c)).Should(ConsistOf(specs.PodName(c, 1), specs.PodName(c, 2)))
		serving := func(id int32) func() string {
			return func() string {
				p := &corev1.Pod{}
				Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: specs.PodName(c, id)}, p)).To(Succeed())
				return p.Labels[specs.LabelServing]
			}
		}
		Eventually(serving(3)).Should(Equal(specs.ServingFalse))
		Eventually(serving(1)).Should(Equal(specs.ServingTrue))
	})
})

// The read Service's selector narrows to serving=true only after the pods
// carry the label: a member of a cluster made without it keeps taking
// reads through the operator's upgrade.
func TestServingLabelsComeBeforeTheServices(t *testing.T) {
	var names []string
	for _, st := range (&Reconciler{}).steps() {
		names = append(names, st.name)
	}
	labels, services := slices.Index(names, "serving labels"), slices.Index(names, "services")
	if labels < 0 || services < 0 || labels > services {
		t.Fatalf("steps %v: the serving labels step must come before the services step", names)
	}
}
