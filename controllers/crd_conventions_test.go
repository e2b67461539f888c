/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

var _ = Describe("Kubernetes conventions of the RolisCluster API", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
	})

	It("scales through the scale subresource (kubectl scale) with the spec's validation, one member at a time", func() {
		c := newCluster(ns, "db", 3)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		fc := newFakeCluster(3, false)
		defer fc.stop()
		startPods(ctx, c, []int32{1, 2, 3}, "rev1", func(id int32) string { return fc.members[uint32(id)].addr() })
		Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))

		scale := &autoscalingv1.Scale{}
		Eventually(func() string {
			Expect(k8s.SubResource("scale").Get(ctx, c, scale)).To(Succeed())
			return scale.Status.Selector
		}).ShouldNot(BeEmpty(), "the operator publishes the pods' selector")
		Expect(scale.Spec.Replicas).To(Equal(int32(3)))
		Expect(scale.Status.Replicas).To(Equal(int32(3)))
		sel, err := labels.Parse(scale.Status.Selector)
		Expect(err).NotTo(HaveOccurred())
		pods := &corev1.PodList{}
		Expect(k8s.List(ctx, pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel})).To(Succeed())
		Expect(pods.Items).To(HaveLen(3), "the selector selects the member pods")

		By("refusing a size the spec refuses")
		for replicas, msg := range map[int32]string{4: "replicas must be odd (1, 3, 5 or 7)", 9: "should be less than or equal to 7", 0: "should be greater than or equal to 1"} {
			bad := scale.DeepCopy()
			bad.Spec.Replicas = replicas
			bad.ResourceVersion = "" // unconditional, as kubectl scale is
			err := k8s.SubResource("scale").Update(ctx, c, client.WithSubResourceBody(bad))
			Expect(err).To(MatchError(ContainSubstring(msg)), "replicas %d", replicas)
		}
		Expect(getCluster(ctx, c).Spec.Replicas).To(Equal(int32(3)), "a refused scale changes nothing")

		By("scaling to 5: the spec changes and the membership step grows the cluster one member at a time")
		scale.Spec.Replicas = 5
		scale.ResourceVersion = ""
		Expect(k8s.SubResource("scale").Update(ctx, c, client.WithSubResourceBody(scale))).To(Succeed())
		Expect(getCluster(ctx, c).Spec.Replicas).To(Equal(int32(5)))
		stsReplicas := func() int32 {
			sts := &appsv1.StatefulSet{}
			Expect(k8s.Get(ctx, byKey(ns, "db"), sts)).To(Succeed())
			return *sts.Spec.Replicas
		}
		for _, id := range []int32{4, 5} {
			Eventually(stsReplicas).Should(Equal(id), "one more pod")
			m := fc.add(uint32(id))
			startPods(ctx, c, []int32{id}, "rev1", func(int32) string { return m.addr() })
			Eventually(func() int { return len(fc.status(uint32(fc.leader())).GetMembers()) }).Should(Equal(int(id)))
		}
		Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
		Eventually(func() int32 {
			Expect(k8s.SubResource("scale").Get(ctx, c, scale)).To(Succeed())
			return scale.Status.Replicas
		}).Should(Equal(int32(5)))
		Expect(eventReasons(ctx, c)()).To(ContainElements(ReasonScaling, ReasonMembershipChanged))
	})

	It("passes tables and the log settings to rolisd, and keeps the tables fixed", func() {
		c := newCluster(ns, "db", 1)
		c.Spec.Tables = []dbv1.TableName{"orders", "customers"}
		c.Spec.LogLevel = "debug"
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Expect(getCluster(ctx, c).Spec.LogFormat).To(Equal("json"), "the default")
		sts := &appsv1.StatefulSet{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db"), sts) }).Should(Succeed())
		Expect(sts.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--tables=orders,customers", "--log-level=debug", "--log-format=json"))

		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) { c.Spec.LogFormat = "text" })).To(Succeed())
		Eventually(func() []string {
			Expect(k8s.Get(ctx, byKey(ns, "db"), sts)).To(Succeed())
			return sts.Spec.Template.Spec.Containers[0].Args
		}).Should(ContainElement("--log-format=text"))

		for what, mutate := range map[string]func(c *dbv1.RolisCluster){
			"another table": func(c *dbv1.RolisCluster) { c.Spec.Tables = append(c.Spec.Tables, "lines") },
			"another order": func(c *dbv1.RolisCluster) { c.Spec.Tables = []dbv1.TableName{"customers", "orders"} },
			"no tables":     func(c *dbv1.RolisCluster) { c.Spec.Tables = nil },
		} {
			Expect(updateCluster(ctx, c, mutate)).To(MatchError(ContainSubstring("tables is immutable")), what)
		}
		plain := newCluster(ns, "plain", 1)
		Expect(k8s.Create(ctx, plain)).To(Succeed())
		Expect(updateCluster(ctx, plain, func(c *dbv1.RolisCluster) { c.Spec.Tables = []dbv1.TableName{"orders"} })).
			To(MatchError(ContainSubstring("tables is immutable")), "adding tables later")
	})

	DescribeTable("refuses bad tables and log settings",
		func(mutate func(c *dbv1.RolisCluster), messages ...string) {
			c := newCluster(ns, "bad", 1)
			mutate(c)
			err := k8s.Create(ctx, c)
			Expect(err).To(HaveOccurred())
			for _, m := range messages {
				Expect(err.Error()).To(ContainSubstring(m))
			}
		},
		Entry("a table name rolisd refuses", func(c *dbv1.RolisCluster) { c.Spec.Tables = []dbv1.TableName{"orders,lines"} },
			"spec.tables[0]", "should match"),
		Entry("an empty table name", func(c *dbv1.RolisCluster) { c.Spec.Tables = []dbv1.TableName{""} },
			"spec.tables[0]", "at least 1 chars long"),
		Entry("a table name over 64 bytes", func(c *dbv1.RolisCluster) {
			c.Spec.Tables = []dbv1.TableName{dbv1.TableName(strings.Repeat("a", 65))}
		}, "spec.tables[0]", "Too long"),
		Entry("an unknown log level", func(c *dbv1.RolisCluster) { c.Spec.LogLevel = "verbose" },
			"spec.logLevel", "Unsupported value"),
		Entry("an unknown log format", func(c *dbv1.RolisCluster) { c.Spec.LogFormat = "xml" },
			"spec.logFormat", "Unsupported value"),
	)

	It("has the short name rolis only, and the printer columns Ready, Leader, Epoch, Members, Lag and Age", func() {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "rolisclusters.db.rolis.io"}, crd)).To(Succeed())
		short, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames")
		Expect(short).To(Equal([]string{"rolis"}), "rc is ReplicationController's")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		Expect(versions).To(HaveLen(1))
		cols, _, _ := unstructured.NestedSlice(versions[0].(map[string]any), "additionalPrinterColumns")
		var names []string
		for _, col := range cols {
			names = append(names, col.(map[string]any)["name"].(string))
		}
		Expect(names).To(ContainElements("Ready", "Leader", "Epoch", "Members", "Lag", "Age"))
		scale, _, _ := unstructured.NestedStringMap(versions[0].(map[string]any), "subresources", "scale")
		Expect(scale).To(Equal(map[string]string{"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
			"labelSelectorPath": ".status.selector"}))
	})
})
