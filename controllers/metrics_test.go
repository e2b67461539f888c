/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

// The operator's metrics (metrics.go) as controller-runtime's registry
// serves them, driven by real reconciles against the fake client.

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// sample is the value of the series of family name whose labels include
// want (the sum when several match; a histogram gives its sample count, and
// sum its sample sum), and how many series matched.
func sample(t interface {
	Helper()
	Fatal(...any)
}, name string, want map[string]string) (value, sum float64, n int) {
	t.Helper()
	RegisterMetrics()
	fams, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue series
				}
			}
			n++
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				value += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				value += m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				value += float64(m.GetHistogram().GetSampleCount())
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return value, sum, n
}

func ofDB(kv ...string) map[string]string {
	l := map[string]string{"namespace": "ns", "rolis_cluster": "db"}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return l
}

// A leader that stops leading is failed over after failover.timeout: one
// failover with reason leader_unhealthy, timed from the first suspicion to
// the new leader; the first election is no failover.
func TestMetricsCountAFailoverByReasonAndTimeIt(t *testing.T) {
	g := NewWithT(t)
	e := newUnitEnv(t, 3, followers(3), interceptor.Funcs{})
	forgetClusterMetrics(client.ObjectKeyFromObject(e.db))
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	e.r.Now = func() time.Time { return now }
	failoverCount, failoverSum, _ := sample(t, "rolis_operator_failover_duration_seconds", map[string]string{"kind": "failover"})

	_, err := e.reconcile(t) // elects member 1
	g.Expect(err).NotTo(HaveOccurred())
	for id, a := range e.dialer {
		a.status.Epoch, a.status.LeaderId, a.status.UptimeSeconds = 1, 1, 100
		a.status.Decided = &rolisv1.EpochRecord{Epoch: 1, LeaderId: 1}
		if id == 1 {
			a.status.Role = rolisv1.Role_LEADER
		}
	}
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	v, _, n := sample(t, "rolis_operator_failovers_total", ofDB())
	g.Expect(v).To(BeZero(), "the first election is not a failover")
	g.Expect(n).To(Equal(2), "a series per reason, at 0, before any failover")
	v, _, _ = sample(t, "rolis_operator_cluster_condition", ofDB("condition", dbv1.ConditionAvailable))
	g.Expect(v).To(Equal(1.0))
	_, _, n = sample(t, "rolis_operator_replication_lag_seconds", ofDB())
	g.Expect(n).To(Equal(1), "a serving leader: the largest lag is known")
	v, _, _ = sample(t, "rolis_operator_cluster_members", ofDB("state", "reachable"))
	g.Expect(v).To(Equal(3.0))

	e.dialer[1].status.Role = rolisv1.Role_FOLLOWER // answers, does not lead
	now = now.Add(time.Second)
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	v, _, _ = sample(t, "rolis_operator_cluster_phase", ofDB("phase", string(dbv1.PhaseFailingOver)))
	g.Expect(v).To(Equal(1.0), "waiting failover.timeout is FailingOver")
	v, _, _ = sample(t, "rolis_operator_cluster_condition", ofDB("condition", dbv1.ConditionAvailable))
	g.Expect(v).To(BeZero())

	now = now.Add(3 * time.Second)
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.dialer[2].calls["PrepareFailover"] + e.dialer[3].calls["PrepareFailover"]).To(Equal(1))
	v, _, _ = sample(t, "rolis_operator_failovers_total", ofDB("reason", ChangeLeaderUnhealthy))
	g.Expect(v).To(Equal(1.0))
	v, _, _ = sample(t, "rolis_operator_switchovers_total", ofDB())
	g.Expect(v).To(BeZero())
	count, sum, _ := sample(t, "rolis_operator_failover_duration_seconds", map[string]string{"kind": "failover"})
	g.Expect(count - failoverCount).To(Equal(1.0))
	g.Expect(sum-failoverSum).To(BeNumerically("~", 3.0, 0.001), "from the first suspicion to the new leader")

	// The next passes see the new leader serving: counted once.
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	v, _, _ = sample(t, "rolis_operator_failovers_total", ofDB())
	g.Expect(v).To(Equal(1.0))
}

// A leader that comes back within failover.timeout was not failed over:
// nothing is counted.
func TestMetricsCountNoFailoverWhenTheLeaderRecovers(t *testing.T) {
	g := NewWithT(t)
	e := servingClusterSeenServing(t, g)
	forgetClusterMetrics(client.ObjectKeyFromObject(e.db))
	e.dialer[1].statusErr = status.Error(codes.Unavailable, "connection refused")
	_, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	e.dialer[1].statusErr = nil
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.condition(t, dbv1.ConditionAvailable).Reason).To(Equal(ReasonLeaderServing))
	v, _, _ := sample(t, "rolis_operator_failovers_total", ofDB())
	g.Expect(v).To(BeZero())
	v, _, _ = sample(t, "rolis_operator_switchovers_total", ofDB())
	g.Expect(v).To(BeZero())
}

// The leader's pod is being deleted (a rollout, a drain): a switchover.
func TestMetricsCountASwitchoverWhenTheLeadersPodIsDeleted(t *testing.T) {
	g := NewWithT(t)
	e := servingClusterSeenServing(t, g)
	forgetClusterMetrics(client.ObjectKeyFromObject(e.db))
	e.dialer[1].statusErr = status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	deleted := metav1.NewTime(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	e.r.APIReader = interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if p, ok := obj.(interface{ GetName() string }); ok && p.GetName() == "db-1" {
				obj.SetDeletionTimestamp(&deleted)
			}
			return nil
		},
	})
	_, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.dialer[2].calls["PrepareFailover"] + e.dialer[3].calls["PrepareFailover"]).To(Equal(1))
	v, _, _ := sample(t, "rolis_operator_switchovers_total", ofDB("reason", ChangeLeaderLeaving))
	g.Expect(v).To(Equal(1.0))
	v, _, _ = sample(t, "rolis_operator_failovers_total", ofDB())
	g.Expect(v).To(BeZero())
}

// A failed step is counted by its name; the phase has one series per phase
// of the CRD, exactly one of them 1; a deleted cluster leaves no series.
func TestMetricsCountReconcileErrorsByStepAndDropADeletedCluster(t *testing.T) {
	g := NewWithT(t)
	e := newUnitEnv(t, 3, followers(3), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*appsv1.StatefulSet); ok {
				return apierrors.NewInternalError(fmt.Errorf("etcd is on fire"))
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	forgetClusterMetrics(client.ObjectKeyFromObject(e.db))
	_, err := e.reconcile(t)
	g.Expect(err).To(HaveOccurred())
	_, err = e.reconcile(t)
	g.Expect(err).To(HaveOccurred())
	v, _, _ := sample(t, "rolis_operator_reconcile_errors_total", ofDB("step", "statefulset"))
	g.Expect(v).To(Equal(2.0))
	v, _, n := sample(t, "rolis_operator_cluster_phase", ofDB())
	g.Expect(n).To(Equal(7), "one series per phase")
	g.Expect(v).To(Equal(1.0), "exactly one phase is 1")
	v, _, _ = sample(t, "rolis_operator_cluster_condition", ofDB("condition", dbv1.ConditionDegraded))
	g.Expect(v).To(Equal(1.0))

	g.Expect(e.c.Delete(context.Background(), e.db)).To(Succeed())
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"rolis_operator_failovers_total", "rolis_operator_reconcile_errors_total", "rolis_operator_cluster_phase",
		"rolis_operator_cluster_condition", "rolis_operator_cluster_members", "rolis_operator_replication_lag_seconds"} {
		_, _, n := sample(t, name, ofDB())
		g.Expect(n).To(BeZero(), name)
	}
}
