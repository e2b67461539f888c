/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// The operator's own metrics, served with controller-runtime's on the
// manager's metrics endpoint (docs/operations.md, "Operator metrics"). The
// per-cluster gauges are set from the status at every reconcile and
// dropped with the cluster; the alerts of the chart's PrometheusRule read
// them. A cluster is named by the labels namespace and rolis_cluster, as
// the members' own series are (specs.ServiceMonitor): the chart's
// ServiceMonitor of the operator honours these labels.

// Leader changes the operator made, as the reason label of the counters.
const (
	// The leader's pod or process is gone (deleted, killed, restarted):
	// failed over at once.
	ChangeLeaderGone = "leader_gone"
	// The leader did not answer for failover.timeout.
	ChangeLeaderUnhealthy = "leader_unhealthy"
	// The leader's pod is being deleted by a rollout or a drain: a planned
	// switchover.
	ChangeLeaderLeaving = "leader_leaving"
	// A user asked for another leader (a switchover request).
	ChangeRequested = "requested"
)

// pendingLeaderChange is a failover or switchover under way: why, since
// when, and the epoch it leaves. It completes when a leader serves a later
// epoch, and is dropped when the old leader serves again.
type pendingLeaderChange struct {
	reason string
	since  time.Time
	epoch  uint64
}

// noteLeaderChange records why the leader is being replaced (the first
// reason seen wins; a later one of the same change does not reset it).
func (m *memory) noteLeaderChange(reason string, since time.Time, epoch uint64) {
	if m.leaderChange == nil || m.leaderChange.epoch != epoch {
		m.leaderChange = &pendingLeaderChange{reason: reason, since: since, epoch: epoch}
	}
}

// settleLeaderChange is called when a leader serves (or opened) epoch: a
// change pending from an older epoch is counted; one of this epoch (the
// leader recovered) is dropped.
func (m *memory) settleLeaderChange(c *dbv1.RolisCluster, epoch uint64, now time.Time) {
	p := m.leaderChange
	if p == nil {
		return
	}
	m.leaderChange = nil
	if epoch > p.epoch {
		observeLeaderChange(c, p.reason, p.since, now)
	}
}

var (
	metricFailovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rolis_operator_failovers_total",
		Help: "Unplanned leader changes the operator completed, by reason (leader_gone, leader_unhealthy).",
	}, []string{"namespace", "rolis_cluster", "reason"})
	metricSwitchovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rolis_operator_switchovers_total",
		Help: "Planned leader changes the operator completed, by reason (leader_leaving, requested).",
	}, []string{"namespace", "rolis_cluster", "reason"})
	metricFailoverDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "rolis_operator_failover_duration_seconds",
		Help: "From the leader first seen unhealthy or leaving to the new leader open, by kind (failover, switchover).",
		// The sample's failover.timeout is 10 s; a gone leader takes about 1 s.
		Buckets: []float64{0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 120, 300},
	}, []string{"kind"})
	metricReconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rolis_operator_reconcile_errors_total",
		Help: "Reconcile steps that failed (not counting stale-cache conflicts), by step.",
	}, []string{"namespace", "rolis_cluster", "step"})
	metricPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rolis_operator_cluster_phase",
		Help: "1 for the phase the cluster is in, 0 for the others.",
	}, []string{"namespace", "rolis_cluster", "phase"})
	metricCondition = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rolis_operator_cluster_condition",
		Help: "Per condition of the cluster's status (Ready, Available, FailingOver, Degraded, Progressing, DataLoss, ...): 1 when True, 0 when False or Unknown.",
	}, []string{"namespace", "rolis_cluster", "condition"})
	metricMembers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rolis_operator_cluster_members",
		Help: "Members in the cluster's status, by what the last probe saw (reachable, unreachable).",
	}, []string{"namespace", "rolis_cluster", "state"})
	metricReplicationLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rolis_operator_replication_lag_seconds",
		Help: "The largest replication lag of a member that answers (status.replicationLag); absent without a serving leader.",
	}, []string{"namespace", "rolis_cluster"})
)

var registerMetrics sync.Once

// RegisterMetrics adds the operator's metrics to controller-runtime's
// registry (idempotent; NewManager calls it).
func RegisterMetrics() {
	registerMetrics.Do(func() {
		ctrlmetrics.Registry.MustRegister(metricFailovers, metricSwitchovers, metricFailoverDuration,
			metricReconcileErrors, metricPhase, metricCondition, metricMembers, metricReplicationLag)
	})
}

// every phase of the CRD's enum, so that each has a series (0 or 1).
var allPhases = []dbv1.ClusterPhase{dbv1.PhasePending, dbv1.PhaseCreating, dbv1.PhaseRunning,
	dbv1.PhaseFailingOver, dbv1.PhaseScaling, dbv1.PhaseUpgrading, dbv1.PhaseDegraded}

// observeLeaderChange counts a completed failover or switchover and how long
// it took since the leader was first seen unhealthy or leaving (since is
// zero when unknown: counted, not timed).
func observeLeaderChange(c *dbv1.RolisCluster, reason string, since, now time.Time) {
	kind, counter := "failover", metricFailovers
	if reason == ChangeLeaderLeaving || reason == ChangeRequested {
		kind, counter = "switchover", metricSwitchovers
	}
	counter.WithLabelValues(c.Namespace, c.Name, reason).Inc()
	if !since.IsZero() && !now.Before(since) {
		metricFailoverDuration.WithLabelValues(kind).Observe(now.Sub(since).Seconds())
	}
}

func observeReconcileError(key types.NamespacedName, step string) {
	metricReconcileErrors.WithLabelValues(key.Namespace, key.Name, step).Inc()
}

// recordClusterMetrics sets the per-cluster gauges from its status.
func recordClusterMetrics(c *dbv1.RolisCluster) {
	ns, name := c.Namespace, c.Name
	// Every reason from the start, at 0: increase() over a series that
	// appears at 1 sees no increase, and the first failover would alert no one.
	for _, reason := range []string{ChangeLeaderGone, ChangeLeaderUnhealthy} {
		metricFailovers.WithLabelValues(ns, name, reason).Add(0)
	}
	for _, reason := range []string{ChangeLeaderLeaving, ChangeRequested} {
		metricSwitchovers.WithLabelValues(ns, name, reason).Add(0)
	}
	for _, p := range allPhases {
		v := 0.0
		if c.Status.Phase == p {
			v = 1
		}
		metricPhase.WithLabelValues(ns, name, string(p)).Set(v)
	}
	for _, cond := range c.Status.Conditions {
		v := 0.0
		if cond.Status == "True" {
			v = 1
		}
		metricCondition.WithLabelValues(ns, name, cond.Type).Set(v)
	}
	reachable, unreachable := 0, 0
	for _, m := range c.Status.Members {
		if m.Role == "Unreachable" {
			unreachable++
		} else {
			reachable++
		}
	}
	metricMembers.WithLabelValues(ns, name, "reachable").Set(float64(reachable))
	metricMembers.WithLabelValues(ns, name, "unreachable").Set(float64(unreachable))
	if c.Status.ReplicationLag != nil {
		metricReplicationLag.WithLabelValues(ns, name).Set(c.Status.ReplicationLag.Seconds())
	} else {
		metricReplicationLag.DeleteLabelValues(ns, name)
	}
}

// forgetClusterMetrics drops every series of a deleted cluster (the
// counters too: a new cluster of the same name starts from zero).
func forgetClusterMetrics(key types.NamespacedName) {
	l := prometheus.Labels{"namespace": key.Namespace, "rolis_cluster": key.Name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		metricFailovers, metricSwitchovers, metricReconcileErrors, metricPhase, metricCondition, metricMembers,
		metricReplicationLag,
	} {
		v.DeletePartialMatch(l)
	}
}
