/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// fromOf returns the peers admitted on a port ("any" for a rule without
// peers, "none" without a rule).
func fromOf(np *networkingv1.NetworkPolicy, port int32) any {
	for _, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			if p.Port != nil && p.Port.IntVal == port {
				if len(r.From) == 0 {
					return "any"
				}
				return r.From
			}
		}
	}
	return "none"
}

var _ = Describe("NetworkPolicy", Ordered, func() {
	ctx := context.Background()
	var ns string
	var c *dbv1.RolisCluster
	np := &networkingv1.NetworkPolicy{}
	get := func() error { return k8s.Get(ctx, byKey(ns, "db"), np) }
	BeforeAll(func() {
		ns = newNamespace(ctx)
		c = newCluster(ns, "db", 3)
		Expect(k8s.Create(ctx, c)).To(Succeed())
	})

	It("is made for every cluster: replication from the members, the client port from anyone without a selector", func() {
		Eventually(get).Should(Succeed())
		Expect(np.Spec.PodSelector.MatchLabels).To(Equal(specs.SelectorLabels(c)))
		Expect(np.OwnerReferences).To(ContainElement(HaveField("Kind", "RolisCluster")))
		members := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: specs.SelectorLabels(c)}}}
		Expect(fromOf(np, specs.ReplicationPort)).To(Equal(members))
		Expect(fromOf(np, specs.AcceptStreamPort)).To(Equal(members))
		Expect(fromOf(np, specs.ClientPort)).To(Equal("any"))
		Expect(fromOf(np, specs.MetricsPort)).To(Equal("any"))
		Expect(fromOf(np, specs.AdminPort)).To(Equal("any"), "the test operator runs outside any namespace")
	})

	It("follows spec.clientSelector and spec.monitoring.namespaceSelector", func() {
		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
			c.Spec.ClientSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"db-client": "true"}}
			c.Spec.Monitoring.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"monitoring": "true"}}
		})).To(Succeed())
		Eventually(func() any { Expect(get()).To(Succeed()); return fromOf(np, specs.ClientPort) }).Should(Equal(
			[]networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"db-client": "true"}}}}))
		Expect(fromOf(np, specs.MetricsPort)).To(Equal(
			[]networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"monitoring": "true"}}}}))
	})

	It("is made again when deleted, and removed when turned off", func() {
		old := np.UID
		Expect(k8s.Delete(ctx, np)).To(Succeed())
		Eventually(func() bool { return get() == nil && np.UID != old }).Should(BeTrue())
		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) { c.Spec.NetworkPolicy.Enabled = ptr.To(false) })).To(Succeed())
		Eventually(get).Should(MatchError(ContainSubstring("not found")))
	})
})
