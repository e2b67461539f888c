/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rolisdb/rolis/controllers/specs"
)

// reconcileStatefulSet makes the StatefulSet and reads its pods.
//
// It owns the pod template, the update strategy and the retention policy;
// it sets the replica count only when it creates the StatefulSet (later the
// membership step moves it, one member at a time). The volume claim
// templates, selector and service name cannot change (the API makes the
// fields behind them immutable).
func (r *Reconciler) reconcileStatefulSet(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	desired := specs.StatefulSet(c, s.replicas, s.configHash, r.Options)
	sts := &appsv1.StatefulSet{}
	if _, err := r.apply(ctx, sts, desired, func() {
		if sts.CreationTimestamp.IsZero() {
			sts.Spec = desired.Spec
			return
		}
		sts.Spec.Template = desired.Spec.Template
		sts.Spec.UpdateStrategy = desired.Spec.UpdateStrategy
		sts.Spec.RevisionHistoryLimit = desired.Spec.RevisionHistoryLimit
		sts.Spec.PersistentVolumeClaimRetentionPolicy = desired.Spec.PersistentVolumeClaimRetentionPolicy
	}); err != nil {
		return proceed, err
	}
	s.sts = sts
	s.replicas = *sts.Spec.Replicas
	s.cluster.Status.Replicas = s.replicas
	s.cluster.Status.Selector = labels.SelectorFromSet(specs.SelectorLabels(c)).String() // the scale subresource's

	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(specs.SelectorLabels(c))); err != nil {
		return proceed, err
	}
	prefix := specs.StatefulSetName(c) + "-"
	for i := range pods.Items {
		p := &pods.Items[i]
		ord, err := strconv.Atoi(strings.TrimPrefix(p.Name, prefix))
		if err != nil || !strings.HasPrefix(p.Name, prefix) {
			continue // not a member pod
		}
		s.pods[int32(ord)] = p
	}
	return proceed, nil
}

// podReady is the pod's Ready condition.
func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podOutdated says whether a pod runs an older revision than the
// StatefulSet's update revision (known only once the StatefulSet controller
// has observed the current spec).
func podOutdated(sts *appsv1.StatefulSet, p *corev1.Pod) bool {
	if sts == nil || sts.Status.UpdateRevision == "" || sts.Status.ObservedGeneration < sts.Generation {
		return false
	}
	return p.Labels[appsv1.ControllerRevisionHashLabelKey] != sts.Status.UpdateRevision
}

func podDescription(p *corev1.Pod) string {
	return fmt.Sprintf("%s/%s", p.Namespace, p.Name)
}
