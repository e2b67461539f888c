/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"

	"github.com/rolisdb/rolis/controllers/specs"
)

// reconcileDisruptionBudget makes the PodDisruptionBudget (one voluntary
// disruption at a time).
func (r *Reconciler) reconcileDisruptionBudget(ctx context.Context, s *state) (outcome, error) {
	desired := specs.PodDisruptionBudget(s.cluster)
	pdb := &policyv1.PodDisruptionBudget{}
	_, err := r.apply(ctx, pdb, desired, func() { pdb.Spec = desired.Spec })
	return proceed, err
}
