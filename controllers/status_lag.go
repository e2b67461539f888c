/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rolisdb/rolis/controllers/leadership"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// tsWorkerBits is the low bits of a commit ts that hold the worker id; the
// rest is nanoseconds of the leader's clock (docs/architecture.md, the
// commit protocol: ts = (now_ns << 8) | worker_id).
const tsWorkerBits = 8

// memberLag is how far a member's replayed state is behind the leader's
// watermark G, in the leader's commit time, rounded to the millisecond.
// It is known only when both keys are of the same epoch: a new leader
// starts its own clock, so ts of different epochs do not compare.
func memberLag(leaderG, replayed *rolisv1.LogKey) (time.Duration, bool) {
	if leaderG == nil || replayed == nil || leaderG.GetEpoch() != replayed.GetEpoch() {
		return 0, false
	}
	if replayed.GetTs() >= leaderG.GetTs() {
		return 0, true
	}
	ns := (leaderG.GetTs() - replayed.GetTs()) >> tsWorkerBits
	return time.Duration(ns).Round(time.Millisecond), true
}

// setReplicationLag fills in the lag of every member in the status and the
// largest one (the Lag column), from the last probe. Without a serving
// leader there is no G to measure against and the lags are unset.
func setReplicationLag(s *state) {
	st := &s.cluster.Status
	st.ReplicationLag = nil
	if s.assessment.State != leadership.Serving || s.assessment.Leader == nil {
		return
	}
	leader := s.assessment.Leader
	g := leader.Status.GetWatermark()
	var largest *time.Duration
	for i := range st.Members {
		ms := &st.Members[i]
		ms.Lag = nil
		m := s.member(ms.ID)
		if m == nil || !m.Reachable() {
			continue
		}
		lag, ok := time.Duration(0), true
		if m.ID != leader.ID {
			lag, ok = memberLag(g, m.Status.GetReplayed())
		}
		if !ok {
			continue
		}
		ms.Lag = &metav1.Duration{Duration: lag}
		if largest == nil || lag > *largest {
			largest = &lag
		}
	}
	if largest != nil {
		st.ReplicationLag = &metav1.Duration{Duration: *largest}
	}
}
