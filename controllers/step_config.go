/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// reconcileConfig writes the engine ConfigMap and makes sure the epoch
// record and the promotion Lease exist.
//
// The number of members in the ConfigMap's peer list follows the
// StatefulSet (the membership step moves both); before the StatefulSet
// exists it is the desired number of replicas.
func (r *Reconciler) reconcileConfig(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	s.configHash = specs.ConfigHash(specs.EngineSettings(c))
	s.cluster.Status.ConfigHash = s.configHash

	sts := &appsv1.StatefulSet{}
	err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.StatefulSetName(c)}, sts)
	switch {
	case err == nil:
		s.sts = sts
		s.replicas = *sts.Spec.Replicas
	case apierrors.IsNotFound(err):
		s.replicas = c.DesiredReplicas()
	default:
		return proceed, err
	}

	members := s.replicas
	cm := &corev1.ConfigMap{}
	existing := &corev1.ConfigMap{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.ConfigMapName(c)}, existing); err == nil {
		// Never shrink the peer list under a pod that may still start with it.
		if n, err := strconv.Atoi(existing.Data[specs.KeyMembers]); err == nil && int32(n) > members {
			members = int32(n)
		}
	}
	desired := specs.EngineConfigMap(c, members, r.Options)
	if _, err := r.apply(ctx, cm, desired, func() { cm.Data = desired.Data }); err != nil {
		return proceed, err
	}

	if err := r.createOnce(ctx, specs.EpochConfigMap(c)); err != nil {
		return proceed, err
	}
	if err := r.ownEpochRecord(ctx, c); err != nil {
		return proceed, err
	}
	if err := r.createOnce(ctx, specs.FailoverLease(c)); err != nil {
		return proceed, err
	}
	return proceed, nil
}

// ownEpochRecord makes the epoch record's owner references follow
// storage.retentionPolicy.whenDeleted (specs.EpochRecordOwners): a record
// made under the other policy, or left by a deleted cluster of the same
// name, is adopted or released. Only the metadata is patched: the record
// itself changes by compare-and-set alone (a concurrent one fails on the
// new resourceVersion and is retried).
func (r *Reconciler) ownEpochRecord(ctx context.Context, c *dbv1.RolisCluster) error {
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.EpochConfigMapName(c)}, cm); err != nil {
		return client.IgnoreNotFound(err)
	}
	want := specs.EpochRecordOwners(c)
	if equality.Semantic.DeepEqual(cm.OwnerReferences, want) {
		return nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.OwnerReferences = want
	return r.Patch(ctx, cm, patch)
}
