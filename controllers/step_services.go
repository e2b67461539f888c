/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/rolisdb/rolis/controllers/specs"
)

// reconcileServices makes the headless peer Service, the client Service
// (role=leader) and the read Service. Fields the API server fills in
// (clusterIP, nodePorts, ipFamilies) are left alone.
func (r *Reconciler) reconcileServices(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	for _, desired := range []*corev1.Service{specs.HeadlessService(c), specs.ClientService(c), specs.ReadService(c)} {
		svc := &corev1.Service{}
		if _, err := r.apply(ctx, svc, desired, func() {
			if svc.CreationTimestamp.IsZero() {
				svc.Spec = desired.Spec
				return
			}
			svc.Spec.Type = desired.Spec.Type
			svc.Spec.Selector = desired.Spec.Selector
			svc.Spec.Ports = desired.Spec.Ports
			svc.Spec.PublishNotReadyAddresses = desired.Spec.PublishNotReadyAddresses
		}); err != nil {
			return proceed, err
		}
	}
	return proceed, nil
}
