/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"crypto/tls"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// NewScheme knows every kind the operator reads or writes.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, dbv1.AddToScheme, cmv1.AddToScheme, monv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// ManagerOptions are the operator's process settings.
type ManagerOptions struct {
	MetricsAddr string
	// MetricsSecure serves /metrics over HTTPS and lets in only requests
	// whose bearer token may get /metrics (TokenReview and
	// SubjectAccessReview: the metrics-reader ClusterRole), as kubebuilder
	// scaffolds it.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key for the metrics endpoint;
	// empty: a self-signed certificate made at start.
	MetricsCertDir          string
	ProbeAddr               string
	LeaderElection          bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	// Namespaces limit the operator to these namespaces (none = all).
	Namespaces []string
}

// NewManager makes the controller manager the way the operator runs it (the
// integration tests use it too):
//   - leader election, so several operator replicas are safe; the lease is
//     released on a clean shutdown so a successor takes over at once;
//   - the informer cache holds only the operator's own objects (by label),
//     not every pod, Service or Lease (node heartbeats) of the cluster;
//   - Secrets (TLS keys), Certificates, Issuers and ServiceMonitors are read
//     directly, by name, never cached or listed (the operator's RBAC has no
//     list or watch of Secrets): the last two may not even be installed, and a cache
//     would need their API at start-up.
func NewManager(cfg *rest.Config, o ManagerOptions) (ctrl.Manager, error) {
	ours := labels.SelectorFromSet(labels.Set{specs.LabelManagedBy: specs.ManagedBy})
	cacheOpts := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:                   {Label: labels.SelectorFromSet(labels.Set{specs.LabelName: specs.AppName})},
			&corev1.ConfigMap{}:             {Label: ours},
			&corev1.Service{}:               {Label: ours},
			&appsv1.StatefulSet{}:           {Label: ours},
			&policyv1.PodDisruptionBudget{}: {Label: ours},
			&networkingv1.NetworkPolicy{}:   {Label: ours},
			&coordinationv1.Lease{}:         {Label: ours},
		},
	}
	if len(o.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	metrics := metricsserver.Options{BindAddress: o.MetricsAddr, SecureServing: o.MetricsSecure}
	if o.MetricsSecure {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
		metrics.CertDir = o.MetricsCertDir
		// HTTP/2 off (CVE-2023-44487 and CVE-2023-39325), as scaffolded.
		metrics.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	RegisterMetrics()
	renew, lease := 10*time.Second, 15*time.Second
	return ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        NewScheme(),
		Metrics:                       metrics,
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		Cache:                         cacheOpts,
		Client: client.Options{Cache: &client.CacheOptions{
			DisableFor: []client.Object{&corev1.Secret{}, &cmv1.Certificate{}, &cmv1.Issuer{}, &monv1.ServiceMonitor{}},
		}},
	})
}
