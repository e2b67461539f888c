/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rolisdb/rolis/controllers/leadership"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// beatAdmin answers Status with whatever the test stored last.
type beatAdmin struct {
	*unitAdmin
	st   atomic.Pointer[rolisv1.StatusResponse]
	down atomic.Bool
}

func (a *beatAdmin) Status(context.Context) (*rolisv1.StatusResponse, error) {
	if a.down.Load() {
		return nil, status.Error(codes.Unavailable, "connect: connection refused")
	}
	return a.st.Load(), nil
}

type beatDialer struct{ a *beatAdmin }

func (d beatDialer) Dial(context.Context, leadership.Target) (leadership.AdminClient, error) {
	return d.a, nil
}

// The heartbeat asks for a reconcile when the leader stops answering as the
// leader of its epoch and when it answers again, and remembers since when
// it has failed, for that leader and epoch only.
func TestHeartbeatAsksForAReconcileWhenTheLeaderStopsAndWhenItIsBack(t *testing.T) {
	g := NewWithT(t)
	a := &beatAdmin{unitAdmin: &unitAdmin{calls: map[string]int{}}}
	leading := &rolisv1.StatusResponse{Id: 1, Role: rolisv1.Role_LEADER, Epoch: 4, Healthy: true}
	a.st.Store(leading)
	h := newHeartbeat(beatDialer{a}, 100*time.Millisecond, time.Now)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Start(ctx) //nolint:errcheck
	key := types.NamespacedName{Namespace: "ns", Name: "db"}
	g.Eventually(func() bool {
		h.watch(key, leadership.Target{ID: 1}, 4, 10*time.Millisecond)
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.beats[key] != nil
	}).Should(BeTrue(), "watching once the manager started it")

	g.Consistently(h.events, "100ms").ShouldNot(Receive(), "a serving leader asks for nothing")
	g.Expect(h.failingSince(key, 1, 4).IsZero()).To(BeTrue())

	before := time.Now()
	a.down.Store(true)
	g.Eventually(h.events, "2s").Should(Receive(), "a reconcile as soon as the leader does not answer")
	since := h.failingSince(key, 1, 4)
	g.Expect(since).To(BeTemporally(">=", before))
	g.Expect(h.failingSince(key, 2, 4).IsZero()).To(BeTrue(), "another leader")
	g.Expect(h.failingSince(key, 1, 5).IsZero()).To(BeTrue(), "another epoch")
	g.Consistently(h.events, "100ms").ShouldNot(Receive(), "one request per change, not one per heartbeat")
	g.Expect(h.failingSince(key, 1, 4)).To(Equal(since), "counted from the first failure")

	a.down.Store(false)
	g.Eventually(h.events, "2s").Should(Receive(), "and again when it is back")
	g.Expect(h.failingSince(key, 1, 4).IsZero()).To(BeTrue())

	a.st.Store(&rolisv1.StatusResponse{Id: 1, Role: rolisv1.Role_FOLLOWER, Epoch: 4, Healthy: true})
	g.Eventually(h.events, "2s").Should(Receive(), "answering but not leading is failing too")

	h.forget(key)
	g.Expect(h.failingSince(key, 1, 4).IsZero()).To(BeTrue())
}

func TestHeartbeatIntervalIsATenthOfTheTimeoutWithinBounds(t *testing.T) {
	g := NewWithT(t)
	for timeout, want := range map[time.Duration]time.Duration{
		time.Second: 200 * time.Millisecond, 3 * time.Second: 300 * time.Millisecond,
		5 * time.Second: 500 * time.Millisecond, time.Minute: time.Second,
	} {
		c := newCluster("ns", "db", 3)
		c.Spec.Failover.Timeout = &metav1.Duration{Duration: timeout}
		g.Expect(heartbeatInterval(c)).To(Equal(want), "timeout %v", timeout)
	}
}
