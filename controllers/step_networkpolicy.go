/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rolisdb/rolis/controllers/specs"
)

// reconcileNetworkPolicy makes the members' NetworkPolicy (specs.NetworkPolicy
// says which port admits whom), or removes it when spec.networkPolicy.enabled
// is false. It is made before the pods, so no member serves unguarded. A
// NetworkPolicy is only as good as the network plugin that enforces it
// (docs/operations.md, "Network policy").
func (r *Reconciler) reconcileNetworkPolicy(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	if !c.NetworkPolicyEnabled() {
		np := &networkingv1.NetworkPolicy{}
		np.Name, np.Namespace = specs.NetworkPolicyName(c), c.Namespace
		if err := r.Get(ctx, client.ObjectKeyFromObject(np), np); err != nil {
			return proceed, client.IgnoreNotFound(err)
		}
		if !isOwnedBy(np.OwnerReferences, c.UID) {
			return proceed, nil // not ours: leave it
		}
		return proceed, client.IgnoreNotFound(r.Delete(ctx, np))
	}
	desired := specs.NetworkPolicy(c, r.Options)
	np := &networkingv1.NetworkPolicy{}
	_, err := r.apply(ctx, np, desired, func() { np.Spec = desired.Spec })
	return proceed, err
}

func isOwnedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, ref := range refs {
		if ref.UID == uid {
			return true
		}
	}
	return false
}
