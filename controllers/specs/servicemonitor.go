/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// MetricsClusterLabel names the RolisCluster of a series.
const MetricsClusterLabel = "rolis_cluster"

// ServiceMonitor scrapes every member (ready or not: a member that is
// catching up is the one whose metrics matter) through the headless Service.
// Each series gets the label rolis_cluster, the cluster's name (as the
// operator's own metrics have it; docs/operations.md, "Metrics").
// With TLS the scrape is HTTPS, verified with the cluster's CA (ca.crt of
// the member Secret) against the members' peer names; the metrics port asks
// for no client certificate (the kubelet's probes use it too). While a
// running cluster moves to TLS, the first rollout's members take both
// (--tls-accept-plaintext) and the ones not yet rolled plaintext only, so
// the scrape stays HTTP until the second rollout, whose members not yet
// rolled still take both.
func ServiceMonitor(c *dbv1.RolisCluster, o Options) *monv1.ServiceMonitor {
	meta := objectMeta(c, ServiceMonitorName(c))
	meta.Labels = mergeLabels(meta.Labels, c.Spec.Monitoring.Labels)
	sel := SelectorLabels(c)
	sel[LabelService] = ServicePeers
	ep := monv1.Endpoint{
		Port:     MetricsPortName,
		Path:     "/metrics",
		Interval: monv1.Duration(c.ScrapeInterval()),
		RelabelConfigs: []monv1.RelabelConfig{{
			SourceLabels: []monv1.LabelName{"__meta_kubernetes_pod_label_app_kubernetes_io_instance"},
			TargetLabel:  MetricsClusterLabel,
		}},
	}
	if c.TLSEnabled() && !c.TLSAcceptPlaintext() {
		ep.Scheme = ptr.To(monv1.SchemeHTTPS)
		ep.TLSConfig = &monv1.TLSConfig{SafeTLSConfig: monv1.SafeTLSConfig{
			CA: monv1.SecretOrConfigMap{Secret: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: ServerSecretName(c)}, Key: "ca.crt",
			}},
			ServerName: ptr.To("metrics." + ServiceHost(c, HeadlessServiceName(c), o)),
		}}
	}
	return &monv1.ServiceMonitor{
		ObjectMeta: meta,
		Spec: monv1.ServiceMonitorSpec{
			Selector:          metav1.LabelSelector{MatchLabels: sel},
			NamespaceSelector: monv1.NamespaceSelector{MatchNames: []string{c.Namespace}},
			Endpoints:         []monv1.Endpoint{ep},
		},
	}
}
