/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// What the schema does not check, the spec step does: it changes nothing
// and says what to fix, and the fixed cluster is built.
var _ = Describe("A spec the schema cannot check", func() {
	It("prefaultMemory not below the memory limit: Degraded/InvalidSpec and nothing made, until it is fixed", func() {
		ctx := context.Background()
		ns := newNamespace(ctx)
		c := newCluster(ns, "db", 3)
		c.Spec.PrefaultMemory = ptr.To(resource.MustParse("2Gi"))
		c.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
		Expect(k8s.Create(ctx, c)).To(Succeed())

		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(And(
			HavePrefix("True/InvalidSpec"), ContainSubstring("spec.prefaultMemory (2Gi) must be less than resources.limits.memory (2Gi)")))
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, byKey(ns, "db"), &appsv1.StatefulSet{}))
		}, "2s").Should(BeTrue(), "an invalid spec makes no StatefulSet")

		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
			c.Spec.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("3Gi")
		})).To(Succeed())
		sts := &appsv1.StatefulSet{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db"), sts) }).Should(Succeed())
		Expect(sts.Spec.Template.Spec.Containers[0].Env).To(ContainElements(
			corev1.EnvVar{Name: specs.EnvPrefaultMemory, Value: "2147483648"},
			corev1.EnvVar{Name: specs.EnvHugePages, Value: "true"}))
		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).ShouldNot(ContainSubstring("InvalidSpec"))
	})
})
