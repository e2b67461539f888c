/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rolisdb/rolis/controllers/specs"
)

// The epoch record follows retentionPolicy.whenDeleted: a record left by a
// deleted cluster of the same name (no owner, or the old cluster's uid) is
// released under Retain and adopted under Delete; its data is never touched.
func TestTheEpochRecordIsOwnedAsTheVolumesAreRetained(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	old := metav1.OwnerReference{APIVersion: "db.rolis.io/v1alpha1", Kind: "RolisCluster", Name: "db", UID: "deleted-uid"}
	left := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "db-epoch", Namespace: "ns", Labels: map[string]string{specs.LabelManagedBy: specs.ManagedBy},
			OwnerReferences: []metav1.OwnerReference{old}},
		Data: map[string]string{specs.KeyEpochRecord: `{"epoch":"4","leaderId":2}`, specs.KeyEpoch: "4", specs.KeyLeader: "db-2"},
	}
	e := newUnitEnv(t, 3, followers(3), interceptor.Funcs{}, left)
	record := func() *corev1.ConfigMap {
		cm := &corev1.ConfigMap{}
		g.Expect(e.c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "db-epoch"}, cm)).To(Succeed())
		g.Expect(cm.Data).To(Equal(left.Data), "the record itself is untouched")
		return cm
	}

	g.Expect(e.r.ownEpochRecord(ctx, e.db)).To(Succeed())
	g.Expect(record().OwnerReferences).To(BeEmpty(), "Retain (the default): kept with the volumes")

	e.db.Spec.Storage.RetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	for range 2 { // the second pass changes nothing
		g.Expect(e.r.ownEpochRecord(ctx, e.db)).To(Succeed())
		got := record().OwnerReferences
		g.Expect(got).To(HaveLen(1), "Delete: deleted with the cluster")
		g.Expect(got[0].UID).To(Equal(e.db.UID))
	}

	// No record yet: nothing to own, no error.
	g.Expect(e.c.Delete(ctx, left)).To(Succeed())
	g.Expect(e.r.ownEpochRecord(ctx, e.db)).To(Succeed())
}
