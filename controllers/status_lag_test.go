/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"errors"
	"fmt"
	"testing"
	"time"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// ts of the leader's clock at ns nanoseconds, committed by worker w.
func tsAt(ns uint64, w uint64) uint64 { return ns<<tsWorkerBits | w }

func TestMemberLagIsTheLeadersCommitTimeBetweenGAndTheReplayedKey(t *testing.T) {
	g := &rolisv1.LogKey{Epoch: 3, Ts: tsAt(10_000_000_000, 1)}
	for _, tc := range []struct {
		name     string
		replayed *rolisv1.LogKey
		want     time.Duration
		known    bool
	}{
		{"1.5 s behind", &rolisv1.LogKey{Epoch: 3, Ts: tsAt(8_500_000_000, 7)}, 1500 * time.Millisecond, true},
		{"rounded to the millisecond", &rolisv1.LogKey{Epoch: 3, Ts: tsAt(9_999_999_000, 0)}, 0, true},
		{"caught up", &rolisv1.LogKey{Epoch: 3, Ts: g.Ts}, 0, true},
		{"ahead of the G it was told", &rolisv1.LogKey{Epoch: 3, Ts: g.Ts + 99}, 0, true},
		{"an older epoch's clock", &rolisv1.LogKey{Epoch: 2, Ts: tsAt(1, 0)}, 0, false},
		{"nothing replayed", nil, 0, false},
	} {
		got, known := memberLag(g, tc.replayed)
		if got != tc.want || known != tc.known {
			t.Errorf("%s: memberLag = %v, %v; want %v, %v", tc.name, got, known, tc.want, tc.known)
		}
	}
}

func TestReplicationLagIsTheLargestKnownLagWithAServingLeader(t *testing.T) {
	c := &dbv1.RolisCluster{}
	s := newState(c, &memory{})
	member := func(id int32, role rolisv1.Role, replayedNs uint64) leadership.Member {
		return leadership.Member{ID: id, Pod: fmt.Sprintf("db-%d", id), Status: &rolisv1.StatusResponse{
			Id: uint32(id), Role: role, Healthy: true, Epoch: 2,
			Watermark: &rolisv1.LogKey{Epoch: 2, Ts: tsAt(5_000_000_000, 0)},
			Replayed:  &rolisv1.LogKey{Epoch: 2, Ts: tsAt(replayedNs, 0)},
		}}
	}
	s.members = []leadership.Member{
		member(1, rolisv1.Role_LEADER, 4_000_000_000),
		member(2, rolisv1.Role_FOLLOWER, 4_750_000_000),
		member(3, rolisv1.Role_FOLLOWER, 3_000_000_000),
	}
	s.members[2].Err, s.members[2].Status = errors.New("connection refused"), nil
	for i := range s.members {
		c.Status.Members = append(c.Status.Members, statusOfMember(&s.members[i]))
	}
	s.probed = true

	s.assessment = leadership.Assessment{State: leadership.NoLeader}
	setReplicationLag(s)
	if c.Status.ReplicationLag != nil || c.Status.Members[1].Lag != nil {
		t.Fatalf("no serving leader, no lag: %v %v", c.Status.ReplicationLag, c.Status.Members[1].Lag)
	}

	s.assessment = leadership.Assessment{State: leadership.Serving, Leader: &s.members[0]}
	setReplicationLag(s)
	lags := map[int32]string{}
	for _, m := range c.Status.Members {
		if m.Lag != nil {
			lags[m.ID] = m.Lag.Duration.String()
		}
	}
	if lags[1] != "0s" || lags[2] != "250ms" || len(lags) != 2 {
		t.Errorf("member lags %v: want the leader 0s, member 2 250ms, member 3 (unreachable) none", lags)
	}
	if c.Status.ReplicationLag == nil || c.Status.ReplicationLag.Duration != 250*time.Millisecond {
		t.Errorf("ReplicationLag = %v, want 250ms", c.Status.ReplicationLag)
	}
}
