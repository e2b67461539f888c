/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rolisdb/rolis/controllers/specs"
)

var serviceMonitorGK = schema.GroupKind{Group: monv1.SchemeGroupVersion.Group, Kind: monv1.ServiceMonitorsKind}

// reconcileMonitoring makes the ServiceMonitor when monitoring is on. The
// ServiceMonitor API comes from the prometheus-operator, which may not be
// installed: then a condition says so and the database runs on (metrics are
// still served on the metrics port). The controller does not watch
// ServiceMonitors, so it starts without that API; the periodic probe
// reconcile notices when it appears.
func (r *Reconciler) reconcileMonitoring(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	installed, err := r.crdInstalled(serviceMonitorGK, monv1.SchemeGroupVersion.Version)
	if err != nil {
		return proceed, err
	}
	if !c.Spec.Monitoring.Enabled {
		// Monitoring turned off: remove what it made (the condition says it did).
		if installed && meta.FindStatusCondition(s.original.Status.Conditions, ConditionMonitoringReady) != nil {
			sm := &monv1.ServiceMonitor{}
			sm.Name, sm.Namespace = specs.ServiceMonitorName(c), c.Namespace
			if err := r.Delete(ctx, sm); client.IgnoreNotFound(err) != nil {
				return proceed, err
			}
		}
		return proceed, nil
	}
	if !installed {
		msg := fmt.Sprintf("spec.monitoring.enabled is true but the ServiceMonitor API (%s) is not installed: install the prometheus-operator CRDs; metrics are still served on port %d",
			monv1.SchemeGroupVersion.String(), specs.MetricsPort)
		s.condition(ConditionMonitoringReady, false, ReasonServiceMonitorCRDMissing, msg)
		s.problem(ReasonServiceMonitorCRDMissing, msg)
		return proceed, nil
	}
	desired := specs.ServiceMonitor(c, r.Options)
	sm := &monv1.ServiceMonitor{}
	if _, err := r.apply(ctx, sm, desired, func() { sm.Spec = desired.Spec }); err != nil {
		return proceed, err
	}
	s.condition(ConditionMonitoringReady, true, ReasonServiceMonitorCreated, "ServiceMonitor "+sm.Name+" scrapes every member")
	return proceed, nil
}
