/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// fakeAdmin is an in-memory member. Its handlers default to a member that
// follows the protocol; tests replace them to inject faults.
type fakeAdmin struct {
	mu      sync.Mutex
	id      int32
	status  *rolisv1.StatusResponse
	calls   []string
	prepare func(*rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error)
	open    func(*rolisv1.OpenEpochRequest) (*rolisv1.OpenEpochResponse, error)
	annErr  error
	statErr error
}

func newFakeAdmin(id int32, epoch uint64, g *rolisv1.LogKey) *fakeAdmin {
	f := &fakeAdmin{id: id, status: &rolisv1.StatusResponse{
		Id: uint32(id), Role: rolisv1.Role_FOLLOWER, Epoch: epoch, Watermark: g, Healthy: true,
	}}
	f.prepare = func(r *rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error) {
		f.status.PromisedEpoch = r.NewEpoch
		f.status.Role = rolisv1.Role_CANDIDATE
		return &rolisv1.PrepareFailoverResponse{
			Proposed:   &rolisv1.EpochRecord{Epoch: r.NewEpoch, Watermark: f.status.Watermark, Cut: map[uint64]uint64{}},
			PromisedBy: []uint32{uint32(id)},
		}, nil
	}
	f.open = func(r *rolisv1.OpenEpochRequest) (*rolisv1.OpenEpochResponse, error) {
		f.status.Role = rolisv1.Role_LEADER
		f.status.Epoch = r.Record.Epoch
		return &rolisv1.OpenEpochResponse{Watermark: f.status.Watermark}, nil
	}
	return f
}

func (f *fakeAdmin) record(call string) {
	f.calls = append(f.calls, call)
}

func (f *fakeAdmin) Status(context.Context) (*rolisv1.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Status")
	if f.statErr != nil {
		return nil, f.statErr
	}
	return proto.Clone(f.status).(*rolisv1.StatusResponse), nil
}

func (f *fakeAdmin) PrepareFailover(_ context.Context, r *rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fmt.Sprintf("Prepare(%d)", r.NewEpoch))
	return f.prepare(r)
}

func (f *fakeAdmin) OpenEpoch(_ context.Context, r *rolisv1.OpenEpochRequest) (*rolisv1.OpenEpochResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fmt.Sprintf("Open(%d)", r.Record.Epoch))
	return f.open(r)
}

func (f *fakeAdmin) AnnounceLeader(_ context.Context, r *rolisv1.AnnounceLeaderRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fmt.Sprintf("Announce(%d,%d)", r.Record.Epoch, r.Record.LeaderId))
	if f.annErr != nil {
		return f.annErr
	}
	f.status.Decided = r.Record
	f.status.LeaderId = r.Record.LeaderId
	if uint32(f.id) != r.Record.LeaderId {
		f.status.Role = rolisv1.Role_FOLLOWER
		f.status.Epoch = r.Record.Epoch
	}
	return nil
}

func (f *fakeAdmin) ChangeMembership(_ context.Context, r *rolisv1.ChangeMembershipRequest) (*rolisv1.ChangeMembershipResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fmt.Sprintf("ChangeMembership(%d)", len(r.Members)))
	return &rolisv1.ChangeMembershipResponse{Members: r.Members}, nil
}

func (f *fakeAdmin) Close() error { return nil }

func (f *fakeAdmin) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string{}, f.calls...)
}

type fakeDialer struct {
	members map[int32]*fakeAdmin
	down    map[int32]bool
}

func (d *fakeDialer) Dial(_ context.Context, t Target) (AdminClient, error) {
	if d.down[t.ID] {
		return nil, status.Error(codes.Unavailable, "connection refused")
	}
	m, ok := d.members[t.ID]
	if !ok {
		return nil, fmt.Errorf("no member %d", t.ID)
	}
	return m, nil
}

// memStore is an EpochStore in memory with versions, like the ConfigMap.
type memStore struct {
	mu      sync.Mutex
	rec     *rolisv1.EpochRecord
	version int
	// beforeCAS runs inside CompareAndSwap, to race another decision in.
	beforeCAS func()
}

func (s *memStore) Load(context.Context) (Stored, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		s.rec = &rolisv1.EpochRecord{}
	}
	return Stored{Record: proto.Clone(s.rec).(*rolisv1.EpochRecord), Version: fmt.Sprint(s.version)}, nil
}

func (s *memStore) CompareAndSwap(_ context.Context, version string, rec *rolisv1.EpochRecord) (Stored, error) {
	if s.beforeCAS != nil {
		s.beforeCAS()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if fmt.Sprint(s.version) != version || rec.GetEpoch() <= s.rec.GetEpoch() {
		return Stored{}, ErrSuperseded
	}
	s.version++
	s.rec = proto.Clone(rec).(*rolisv1.EpochRecord)
	return Stored{Record: rec, Version: fmt.Sprint(s.version)}, nil
}
