/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

// Package controllers reconciles RolisClusters. A reconcile is the ordered
// list of small named steps in Reconcile below; each step is idempotent,
// assumes its view of the cluster may be stale, builds its objects with the
// pure functions of package specs, and says "go on", "stop here and come
// back after", or fails. The status step always runs last, so conditions
// say which step stopped and why.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// +kubebuilder:rbac:groups=db.rolis.io,resources=rolisclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=db.rolis.io,resources=rolisclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=db.rolis.io,resources=rolisclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates;issuers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors,verbs=get;list;watch;create;update;patch;delete

// Reconciler reconciles RolisClusters.
type Reconciler struct {
	client.Client
	// APIReader reads around the informer cache, for the epoch record and
	// the promotion Lease, where a stale read must not drive a decision.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// Dialer reaches the members' admin API (tests map pods to processes).
	Dialer leadership.Dialer
	// MemberAddresses names a member in a ChangeMembership request; nil
	// means its pod's DNS names (peerMember). Tests that run rolisd on
	// loopback name its processes.
	MemberAddresses func(c *dbv1.RolisCluster, id int32) *rolisv1.Member
	Options         specs.Options
	Timeouts        leadership.Timeouts
	// Identity names this operator process in the promotion Lease.
	Identity string
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu     sync.Mutex
	memory map[types.NamespacedName]*memory
	// beats watch the serving leaders between reconciles (nil in unit tests).
	beats *heartbeat
}

// memory is what the operator keeps between reconciles of one cluster. It is
// lost when the operator restarts, which only ever delays a failover (the
// leader must then look unhealthy for a whole timeout again), never hastens it.
type memory struct {
	// leaderUnhealthySince is when the decided leader was first seen unhealthy.
	leaderUnhealthySince time.Time
	// leaderGone is set once the event saying the leader is gone was made.
	leaderGone bool
	// serving is the leader's process as last seen serving: a new container
	// or a smaller uptime means it restarted and cannot lead its epoch.
	serving incarnation
	// promotion holds back the next promotion attempt after a failed one.
	promotion backoff
	// membership holds back the next membership change after a failed one.
	membership backoff
	// restarting is the pod the rollout deleted last: the next restart
	// waits until its replacement (another UID) is ready and answers, even
	// if the informer cache still shows the deleted pod as ready.
	restarting *restartingPod
	// podProblems is the problem last reported in an event per member pod
	// (checkPods), so the same state makes one event, not one per reconcile.
	podProblems map[string]string
	// dataLoss is the data loss last reported in an event
	// (leadership.DataLoss.Key), so a state makes one event.
	dataLoss string
	// lastDataLoss is the last assessment, kept while the members that
	// would clear it are away (leadership.DataLoss.Cleared).
	lastDataLoss leadership.DataLoss
	// fenceRefused is the refused fence last reported in an event.
	fenceRefused string
	// leaderChange is the failover or switchover under way (metrics.go).
	leaderChange *pendingLeaderChange
}

type incarnation struct {
	id        int32
	epoch     uint64
	container string
	uptime    uint64
}

type restartingPod struct {
	id  int32
	uid types.UID
}

// backoff spaces out the retries of an action that failed.
type backoff struct {
	notBefore time.Time
	failures  int
	reason    string
	message   string
}

// fail records a failure and returns how long to wait before the next try:
// base, doubling with each failure, at most maxPromotionBackoff.
func (b *backoff) fail(now time.Time, base time.Duration, reason, message string) time.Duration {
	b.failures++
	d := min(base<<min(b.failures-1, 8), maxPromotionBackoff)
	b.notBefore, b.reason, b.message = now.Add(d), reason, message
	return d
}

func (b *backoff) reset() { *b = backoff{} }

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) memoryOf(key types.NamespacedName) *memory {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.memory == nil {
		r.memory = map[types.NamespacedName]*memory{}
	}
	m, ok := r.memory[key]
	if !ok {
		m = &memory{}
		r.memory[key] = m
	}
	return m
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.beats.forget(key)
	forgetClusterMetrics(key)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.memory, key)
}

// step is one named stage of a reconcile.
type step struct {
	name string
	run  func(ctx context.Context, s *state) (outcome, error)
}

// outcome of a step: go on to the next step, or stop and come back after
// requeue (0: only on the next event or the periodic probe).
type outcome struct {
	stop    bool
	requeue time.Duration
}

var proceed = outcome{}

func stopFor(d time.Duration) outcome { return outcome{stop: true, requeue: d} }

// steps is the whole life of a cluster, in order.
func (r *Reconciler) steps() []step {
	return []step{
		{"spec", r.checkSpec},
		{"tls mode", r.resolveTLSMode},
		{"config", r.reconcileConfig},
		{"certificates", r.reconcileCertificates},
		{"serving labels", r.labelNewPods},
		{"services", r.reconcileServices},
		{"network policy", r.reconcileNetworkPolicy},
		{"statefulset", r.reconcileStatefulSet},
		{"pods", r.checkPods},
		{"disruption budget", r.reconcileDisruptionBudget},
		{"monitoring", r.reconcileMonitoring},
		{"members", r.probeMembers},
		{"tls transition", r.advanceTLSTransition},
		{"fencing", r.checkFencing},
		{"leadership", r.reconcileLeadership},
		{"switchover", r.reconcileSwitchover},
		{"membership", r.reconcileMembership},
		{"rollout", r.reconcileRollout},
	}
}

// Reconcile runs the steps, then the status step.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	cluster := &dbv1.RolisCluster{}
	if err := r.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !cluster.DeletionTimestamp.IsZero() {
		// Owner references delete everything the cluster made.
		r.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}

	s := newState(cluster, r.memoryOf(req.NamespacedName))
	requeue := probeInterval(cluster)
	var stepErr error
	for _, st := range r.steps() {
		out, err := st.run(ctx, s)
		if err != nil {
			if isTransient(err) {
				logger.V(1).Info("step hit a stale cache or a conflict; retrying", "step", st.name, "error", err.Error())
				requeue = min(requeue, time.Second)
				break
			}
			stepErr = fmt.Errorf("step %s: %w", st.name, err)
			observeReconcileError(req.NamespacedName, st.name)
			s.problem("StepFailed", fmt.Sprintf("step %s failed: %v", st.name, err))
			break
		}
		if out.requeue > 0 {
			requeue = min(requeue, out.requeue)
		}
		if out.stop {
			logger.V(1).Info("step stopped the reconcile", "step", st.name, "requeue", out.requeue)
			break
		}
	}
	if err := r.updateStatus(ctx, s); err != nil && !isTransient(err) {
		observeReconcileError(req.NamespacedName, "status")
		return reconcile.Result{}, errors.Join(stepErr, fmt.Errorf("step status: %w", err))
	}
	if stepErr != nil {
		return reconcile.Result{}, stepErr // controller-runtime backs off
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// probeInterval is how often a cluster is probed without any event (the
// heartbeat watches the leader much more often, and pod events come at
// once).
func probeInterval(c *dbv1.RolisCluster) time.Duration {
	d := c.FailoverTimeout() / 3
	return max(time.Second, min(d, 10*time.Second))
}

func isTransient(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}

// SetupWithManager registers the controller. Status writes do not trigger
// reconciles (GenerationChanged), so a status that keeps changing cannot
// make the controller spin; pods are watched because their deletion, their
// containers' state and their readiness drive leadership and rollouts; the
// heartbeat asks for a reconcile when the leader stops answering.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Timeouts == (leadership.Timeouts{}) {
		r.Timeouts = leadership.DefaultTimeouts()
	}
	if r.Options.ClusterDomain == "" {
		r.Options = specs.DefaultOptions()
	}
	r.beats = newHeartbeat(r.Dialer, r.Timeouts.Probe, r.now)
	if err := mgr.Add(r.beats); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		WatchesRawSource(source.Channel(r.beats.events, &handler.EnqueueRequestForObject{})).
		For(&dbv1.RolisCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToCluster)).
		Named("roliscluster").
		Complete(r)
}

func podToCluster(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[specs.LabelName] != specs.AppName || l[specs.LabelManagedBy] != specs.ManagedBy || l[specs.LabelInstance] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[specs.LabelInstance]}}}
}
