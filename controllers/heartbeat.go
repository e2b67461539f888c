/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// heartbeat probes the serving leader of every cluster between reconciles,
// at a sub-second pace (heartbeatInterval), and asks for a reconcile as soon
// as the leader stops answering as the leader of its epoch, and again when
// it answers again. The full reconcile (every member, every object) keeps
// its slower pace; only one Status call per interval per cluster is added,
// on one kept connection.
//
// It decides nothing: the reconcile probes again and applies the rules of
// reconcileLeadership. It only remembers when the leader first failed a
// heartbeat (failingSince), which the reconcile may take as the start of
// failover.timeout: a heartbeat that ends in failure at t proves the leader
// stopped answering at or before t, so counting from t never fails over a
// leader that was silent for less than the timeout.
type heartbeat struct {
	dialer  leadership.Dialer
	timeout time.Duration // of one Status call
	now     func() time.Time
	events  chan event.GenericEvent

	mu     sync.Mutex
	ctx    context.Context
	beats  map[types.NamespacedName]*beat
	closed bool
}

// beat watches one leader of one epoch.
type beat struct {
	leader   int32
	epoch    uint64
	interval time.Duration
	cancel   context.CancelFunc

	mu           sync.Mutex
	failingSince time.Time
}

func newHeartbeat(d leadership.Dialer, timeout time.Duration, now func() time.Time) *heartbeat {
	return &heartbeat{dialer: d, timeout: timeout, now: now, events: make(chan event.GenericEvent, 1024),
		beats: map[types.NamespacedName]*beat{}}
}

// heartbeatInterval is failover.timeout / 10, between 200 ms and 1 s.
func heartbeatInterval(c *dbv1.RolisCluster) time.Duration {
	return max(200*time.Millisecond, min(c.FailoverTimeout()/10, time.Second))
}

// Start implements manager.Runnable: beats run while the manager does.
func (h *heartbeat) Start(ctx context.Context) error {
	h.mu.Lock()
	h.ctx = ctx
	h.mu.Unlock()
	<-ctx.Done()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for k, b := range h.beats {
		b.cancel()
		delete(h.beats, k)
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// elected operator watches leaders.
func (h *heartbeat) NeedLeaderElection() bool { return true }

// watch makes sure the leader t of epoch is being watched (replacing the
// watch of an earlier leader or epoch of the cluster).
func (h *heartbeat) watch(key types.NamespacedName, t leadership.Target, epoch uint64, interval time.Duration) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.ctx == nil {
		return
	}
	if b := h.beats[key]; b != nil {
		if b.leader == t.ID && b.epoch == epoch && b.interval == interval {
			return
		}
		b.cancel()
	}
	ctx, cancel := context.WithCancel(h.ctx)
	b := &beat{leader: t.ID, epoch: epoch, interval: interval, cancel: cancel}
	h.beats[key] = b
	go h.run(ctx, key, t, b)
}

// forget stops watching the cluster.
func (h *heartbeat) forget(key types.NamespacedName) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.beats[key]; b != nil {
		b.cancel()
		delete(h.beats, key)
	}
}

// failingSince is when the heartbeat of leader id in epoch first failed and
// has failed since (zero when it answers, or when it is not watched).
func (h *heartbeat) failingSince(key types.NamespacedName, id int32, epoch uint64) time.Time {
	if h == nil {
		return time.Time{}
	}
	h.mu.Lock()
	b := h.beats[key]
	h.mu.Unlock()
	if b == nil || b.leader != id || b.epoch != epoch {
		return time.Time{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failingSince
}

func (h *heartbeat) run(ctx context.Context, key types.NamespacedName, t leadership.Target, b *beat) {
	var c leadership.AdminClient
	defer func() {
		if c != nil {
			c.Close() //nolint:errcheck
		}
	}()
	tick := time.NewTicker(b.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if c == nil {
			var err error
			if c, err = h.dialer.Dial(ctx, t); err != nil {
				c = nil
				h.observe(key, b, false)
				continue
			}
		}
		cctx, cancel := context.WithTimeout(ctx, h.timeout)
		st, err := c.Status(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil && t.Cluster != nil && t.Cluster.TLSTransition() {
			// During a move to TLS the member may have changed what it
			// takes: dial again (TLS first, then plaintext).
			c.Close() //nolint:errcheck
			c = nil
		}
		h.observe(key, b, err == nil && leads(st, b.epoch))
	}
}

// leads says whether a Status is that of the open leader of epoch.
func leads(st *rolisv1.StatusResponse, epoch uint64) bool {
	return st.GetHealthy() && st.GetRole() == rolisv1.Role_LEADER && st.GetEpoch() == epoch
}

// observe records one heartbeat and asks for a reconcile when the answer
// changed (failing after answering, or answering after failing).
func (h *heartbeat) observe(key types.NamespacedName, b *beat, ok bool) {
	b.mu.Lock()
	changed := ok == !b.failingSince.IsZero()
	switch {
	case ok:
		b.failingSince = time.Time{}
	case b.failingSince.IsZero():
		b.failingSince = h.now()
	}
	b.mu.Unlock()
	if !changed {
		return
	}
	ev := event.GenericEvent{Object: &dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
	select {
	case h.events <- ev:
	default: // the queue is full of requests already; one more adds nothing
	}
}
