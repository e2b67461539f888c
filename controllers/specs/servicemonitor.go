/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// MetricsClusterLabel names the RolisCluster of a series.
const MetricsClusterLabel = "rolis_cluster"

// ServiceMonitor scrapes every member (ready or not: a member that is
// catching up is the one whose metrics matter) through the headless Service.
// Each series gets the label rolis_cluster, the cluster's name (as the
// operator's own metrics have it; docs/operations.md, "Metrics").
func ServiceMonitor(c *dbv1.RolisCluster) *monv1.ServiceMonitor {
	meta := objectMeta(c, ServiceMonitorName(c))
	meta.Labels = mergeLabels(meta.Labels, c.Spec.Monitoring.Labels)
	sel := SelectorLabels(c)
	sel[LabelService] = ServicePeers
	return &monv1.ServiceMonitor{
		ObjectMeta: meta,
		Spec: monv1.ServiceMonitorSpec{
			Selector:          metav1.LabelSelector{MatchLabels: sel},
			NamespaceSelector: monv1.NamespaceSelector{MatchNames: []string{c.Namespace}},
			Endpoints: []monv1.Endpoint{{
				Port:     MetricsPortName,
				Path:     "/metrics",
				Interval: monv1.Duration(c.ScrapeInterval()),
				RelabelConfigs: []monv1.RelabelConfig{{
					SourceLabels: []monv1.LabelName{"__meta_kubernetes_pod_label_app_kubernetes_io_instance"},
					TargetLabel:  MetricsClusterLabel,
				}},
			}},
		},
	}
}
