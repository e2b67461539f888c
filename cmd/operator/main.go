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
		probeAddr     = flag.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
		leaderElect   = flag.Bool("leader-elect", true, "elect one active operator among the replicas (keep on with more than one replica)")
		electionID    = flag.String("leader-election-id", "rolis-operator.db.rolis.io", "name of the operator's leader election Lease")
		electionNS    = flag.String("leader-election-namespace", "", "namespace of the leader election Lease (default: the operator's namespace)")
		namespace     = flag.String("watch-namespace", "", "only manage clusters of this namespace (default: all)")
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
		ProbeAddr:               *probeAddr,
		LeaderElection:          *leaderElect,
		LeaderElectionID:        *electionID,
		LeaderElectionNamespace: *electionNS,
		Namespace:               *namespace,
	})
	if err != nil {
		log.Error(err, "cannot create the manager")
		os.Exit(1)
	}

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
			TLS:      controllers.ClientTLS(mgr.GetAPIReader(), specs.Options{ClusterDomain: *clusterDomain}),
		},
		Options:  specs.Options{ClusterDomain: *clusterDomain},
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
	log.Info("starting", "leaderElection", *leaderElect, "namespace", *namespace)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
