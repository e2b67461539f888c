/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

// Command rolis-operator runs the RolisCluster controller. Several replicas
// may run: leader election picks the one that reconciles.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/rolisdb/rolis/controllers"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
)

func main() {
	var (
		metricsAddr   = flag.String("metrics-bind-address", ":8080", "address of the operator's /metrics (0 turns it off)")
		metricsSecure = flag.Bool("metrics-secure", true, "serve /metrics over HTTPS to callers whose token may get /metrics (the metrics-reader ClusterRole); false: plain HTTP, no authentication")
		metricsCerts  = flag.String("metrics-cert-dir", "", "directory with tls.crt and tls.key of the metrics endpoint (default: a self-signed certificate made at start)")
		probeAddr     = flag.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
		leaderElect   = flag.Bool("leader-elect", true, "elect one active operator among the replicas (keep on with more than one replica)")
		electionID    = flag.String("leader-election-id", "rolis-operator.db.rolis.io", "name of the operator's leader election Lease")
		electionNS    = flag.String("leader-election-namespace", "", "namespace of the leader election Lease (default: the operator's namespace)")
		namespace     = flag.String("watch-namespace", "", "only manage clusters of these namespaces, comma-separated (default: all)")
		clusterDomain = flag.String("cluster-domain", "cluster.local", "DNS suffix of the Kubernetes cluster (peer names)")
		probeTimeout  = flag.Duration("probe-timeout", time.Second, "bound of one admin Status call")
	)
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "no Kubernetes configuration")
		os.Exit(1)
	}
	mgr, err := controllers.NewManager(cfg, controllers.ManagerOptions{
		MetricsAddr:             *metricsAddr,
		MetricsSecure:           *metricsSecure,
		MetricsCertDir:          *metricsCerts,
		ProbeAddr:               *probeAddr,
		LeaderElection:          *leaderElect,
		LeaderElectionID:        *electionID,
		LeaderElectionNamespace: *electionNS,
		Namespaces:              splitList(*namespace),
	})
	if err != nil {
		log.Error(err, "cannot create the manager")
		os.Exit(1)
	}

	// The operator's namespace (the downward API's POD_NAMESPACE) is the
	// only one the members' NetworkPolicy admits on the admin port.
	options := specs.Options{ClusterDomain: *clusterDomain, OperatorNamespace: os.Getenv("POD_NAMESPACE")}
	identity, _ := os.Hostname()
	timeouts := leadership.DefaultTimeouts()
	timeouts.Probe = *probeTimeout
	r := &controllers.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorder("rolis-operator"),
		Dialer: leadership.GRPCDialer{
			Resolver: leadership.PodIPResolver{Port: specs.AdminPort},
			TLS:      controllers.OperatorTLS(mgr.GetAPIReader(), options),
		},
		Options:  options,
		Timeouts: timeouts,
		Identity: fmt.Sprintf("%s-%d", identity, os.Getpid()),
	}
	if err := r.SetupWithManager(mgr); err != nil {
		log.Error(err, "cannot set up the controller")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "cannot add the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "cannot add the ready check")
		os.Exit(1)
	}
	log.Info("starting", "leaderElection", *leaderElect, "namespaces", *namespace, "operatorNamespace", options.OperatorNamespace)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
