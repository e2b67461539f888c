/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rolisdb/rolis/controllers/specs"
)

// labelNewPods gives every member pod without a serving label one, before
// the services step applies the read Service (which selects serving=true):
// "false" on a pod labelled role=fenced, "true" otherwise. So a pod the
// StatefulSet creates anew joins the read Service once ready, and the pods
// of a cluster made by an operator without the label keep their reads
// through the upgrade. The label stays out of the pod template: a new
// template is a new revision, and a rolling restart of every member for a
// label is a price nobody asked for. moveLeaderLabel keeps it right from
// then on (docs/operator.md, "Services").
func (r *Reconciler) labelNewPods(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(specs.SelectorLabels(c))); err != nil {
		return proceed, err
	}
	prefix := specs.StatefulSetName(c) + "-"
	for i := range pods.Items {
		p := &pods.Items[i]
		if !strings.HasPrefix(p.Name, prefix) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if _, ok := p.Labels[specs.LabelServing]; ok {
			continue
		}
		if err := r.setLabels(ctx, p, p.Labels[specs.LabelRole], p.Labels[specs.LabelRole] != specs.RoleFenced); err != nil {
			return proceed, err
		}
	}
	return proceed, nil
}

// servingLabel is the value of specs.LabelServing.
func servingLabel(serving bool) string {
	if serving {
		return specs.ServingTrue
	}
	return specs.ServingFalse
}

// setLabels puts the role (none when "") and serving labels on a member
// pod in one patch; nothing when they are already so.
func (r *Reconciler) setLabels(ctx context.Context, p *corev1.Pod, role string, serving bool) error {
	want := servingLabel(serving)
	hasServing, ok := p.Labels[specs.LabelServing]
	if (role == "" || p.Labels[specs.LabelRole] == role) && ok && hasServing == want {
		return nil
	}
	patch := client.MergeFrom(p.DeepCopy())
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	if role != "" {
		p.Labels[specs.LabelRole] = role
	}
	p.Labels[specs.LabelServing] = want
	return client.IgnoreNotFound(r.Patch(ctx, p, patch))
}
