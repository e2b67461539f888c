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
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

var _ = Describe("Creating a RolisCluster", func() {
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
	})

	It("makes the StatefulSet, Services, PodDisruptionBudget, ConfigMaps and Lease, all owned by the cluster but the epoch record", func() {
		owner := getCluster(ctx, c)
		ref := metav1.OwnerReference{APIVersion: "db.rolis.io/v1alpha1", Kind: "RolisCluster", Name: "db", UID: owner.UID}
		owned := func(o client.Object) {
			GinkgoHelper()
			Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(o), o) }).Should(Succeed(), o.GetName())
			Expect(o.GetOwnerReferences()).To(ConsistOf(And(
				HaveField("APIVersion", ref.APIVersion), HaveField("Kind", ref.Kind),
				HaveField("Name", ref.Name), HaveField("UID", ref.UID),
				HaveField("Controller", HaveValue(BeTrue())))), o.GetName())
		}
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}}
		owned(sts)
		for _, name := range []string{"db", "db-peers", "db-read"} {
			owned(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		}
		owned(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-config"}}
		owned(cm)
		// The epoch record goes with the volumes (retained by default), not
		// with the cluster (specs.EpochRecordOwners).
		record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-epoch"}}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(record), record) }).Should(Succeed())
		Expect(record.OwnerReferences).To(BeEmpty(), "db-epoch is kept with the retained volumes")
		owned(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-failover"}})

		By("building the StatefulSet from the spec, with defaults filled in by the API server")
		want := specs.StatefulSet(owner, 3, specs.ConfigHash(specs.EngineSettings(owner)), specs.DefaultOptions())
		Expect(*sts.Spec.Replicas).To(Equal(int32(3)))
		Expect(sts.Spec.UpdateStrategy.Type).To(Equal(appsv1.OnDeleteStatefulSetStrategyType))
		Expect(sts.Spec.Template.Spec.Containers[0].Args).To(Equal(want.Spec.Template.Spec.Containers[0].Args))
		Expect(sts.Spec.Template.Annotations).To(HaveKeyWithValue(specs.AnnotationConfigHash, specs.ConfigHash(specs.EngineSettings(owner))))
		Expect(cm.Data).To(HaveKeyWithValue(specs.KeyPeers, specs.Peers(owner, 3, specs.DefaultOptions())))
		Expect(cm.Data).To(HaveKeyWithValue(specs.KeyWorkerThreads, "2"))

		By("keeping the client Service on the leader and the peer Service headless")
		client := &corev1.Service{}
		Expect(k8s.Get(ctx, byKey(ns, "db"), client)).To(Succeed())
		Expect(client.Spec.Selector).To(HaveKeyWithValue(specs.LabelRole, specs.RoleLeader))
		peers := &corev1.Service{}
		Expect(k8s.Get(ctx, byKey(ns, "db-peers"), peers)).To(Succeed())
		Expect(peers.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		Expect(peers.Spec.PublishNotReadyAddresses).To(BeTrue())
	})

	It("fills in the defaults and reports status conditions while the members are not up", func() {
		got := getCluster(ctx, c)
		Expect(got.Spec.WorkerThreads).To(Equal(int32(2)))
		Expect(got.Spec.BatchSize).To(Equal(int32(dbv1.DefaultBatchSize)))
		Expect(got.Spec.BatchTimeout.Duration.String()).To(Equal("1ms"))
		Expect(got.Spec.Failover.Timeout.Duration.String()).To(Equal("3s"))
		Expect(got.Spec.Storage.Size.String()).To(Equal("1Gi"))

		Eventually(condition(ctx, c, dbv1.ConditionAvailable)).Should(HavePrefix("False/NoLeader"))
		Eventually(condition(ctx, c, dbv1.ConditionProgressing)).Should(HavePrefix("True/"))
		Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("False/NotReady"))
		Eventually(condition(ctx, c, dbv1.ConditionFailingOver)).Should(HavePrefix("False/NoFailover"))
		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(HavePrefix("False/AsExpected"))
		Eventually(func() dbv1.ClusterPhase { return getCluster(ctx, c).Status.Phase }).Should(Equal(dbv1.PhaseCreating))
		got = getCluster(ctx, c)
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Expect(got.Status.Members).To(HaveLen(3))
		Expect(got.Status.Members[0].Role).To(Equal("Unreachable"))
	})

	It("changes the pod template (config hash) when engine settings change, and rolls nothing by itself", func() {
		sts := &appsv1.StatefulSet{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db"), sts) }).Should(Succeed())
		before := sts.Spec.Template.Annotations[specs.AnnotationConfigHash]

		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
			c.Spec.BatchTimeout = &metav1.Duration{Duration: 2 * time.Millisecond}
			c.Spec.BatchSize = 500
		})).To(Succeed())

		Eventually(func() string {
			Expect(k8s.Get(ctx, byKey(ns, "db"), sts)).To(Succeed())
			return sts.Spec.Template.Annotations[specs.AnnotationConfigHash]
		}).ShouldNot(Equal(before))
		Expect(sts.Spec.Template.Spec.Containers[0].Env).To(ContainElements(corev1.EnvVar{Name: specs.EnvBatchSize, Value: "500"},
			corev1.EnvVar{Name: specs.EnvBatchTimeout, Value: "2ms"}))
		Expect(sts.Spec.UpdateStrategy.Type).To(Equal(appsv1.OnDeleteStatefulSetStrategyType), "pods restart only when the operator deletes them")
		cm := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, byKey(ns, "db-config"), cm)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue(specs.KeyBatchTimeout, "2ms"))
	})

	It("puts back an owned object that someone changed, and leaves the replica count to the membership step", func() {
		svc := &corev1.Service{}
		Eventually(func() error { return k8s.Get(ctx, byKey(ns, "db"), svc) }).Should(Succeed())
		svc.Spec.Selector = map[string]string{"hijacked": "true"}
		Expect(k8s.Update(ctx, svc)).To(Succeed())
		// The controller does not react to every event of every object at
		// once; the periodic probe reconcile repairs the drift.
		Eventually(func() map[string]string {
			Expect(k8s.Get(ctx, byKey(ns, "db"), svc)).To(Succeed())
			return svc.Spec.Selector
		}).Should(HaveKeyWithValue(specs.LabelRole, specs.RoleLeader))

		sts := &appsv1.StatefulSet{}
		Expect(k8s.Get(ctx, byKey(ns, "db"), sts)).To(Succeed())
		gen := sts.Generation
		Consistently(func() bool {
			cur := &appsv1.StatefulSet{}
			Expect(k8s.Get(ctx, byKey(ns, "db"), cur)).To(Succeed())
			return cur.Generation == gen && equality.Semantic.DeepEqual(cur.Spec.Replicas, sts.Spec.Replicas)
		}, "3s").Should(BeTrue(), "a settled cluster's StatefulSet is not rewritten on every reconcile")
	})
})
