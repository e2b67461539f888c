/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// fakeCluster is a set of in-process admin servers on loopback that follow
// the shape of the failover protocol (promises from a majority, decided
// records, fencing of older epochs) without any replication: enough to drive
// the operator's state machine end to end over real gRPC. It is not a
// replication test: leadership against real rolisd processes is tested in
// rolisd_test.go. The fakes stay where a real rolisd cannot easily be made
// to do something: counting the failover calls of a cluster without a
// majority, a rolisd without the replication layer (UNIMPLEMENTED), and
// membership changes answered at once (scaling_rolisd_test.go runs them on
// real members).
//
// With unimplemented set, the members behave like a rolisd without the
// replication layer: Status answers (role FOLLOWER, epoch 0) and every
// failover and membership call answers UNIMPLEMENTED.
type fakeCluster struct {
	mu            sync.Mutex
	members       map[uint32]*fakeMember
	unimplemented bool
}

type fakeMember struct {
	cl      *fakeCluster
	id      uint32
	lis     net.Listener
	srv     *grpc.Server
	up      bool
	st      *rolisv1.StatusResponse
	calls   map[string]int
	healthy bool
}

func newFakeCluster(n int, unimplemented bool) *fakeCluster {
	fc := &fakeCluster{members: map[uint32]*fakeMember{}, unimplemented: unimplemented}
	var ms []*rolisv1.Member
	for id := uint32(1); id <= uint32(n); id++ {
		ms = append(ms, &rolisv1.Member{Id: id, Address: "peer"})
	}
	for id := uint32(1); id <= uint32(n); id++ {
		m := &fakeMember{cl: fc, id: id, calls: map[string]int{}, healthy: true, st: &rolisv1.StatusResponse{
			Id: id, Role: rolisv1.Role_FOLLOWER, Healthy: true, Version: "fake",
			Watermark: &rolisv1.LogKey{Epoch: 0, Ts: uint64(100 * id)}, Members: ms,
		}}
		fc.members[id] = m
		m.start("127.0.0.1:0")
	}
	return fc
}

func (m *fakeMember) start(addr string) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		panic(err)
	}
	m.lis = lis
	m.srv = grpc.NewServer()
	rolisv1.RegisterAdminServer(m.srv, &fakeAdmin{m: m})
	m.cl.mu.Lock()
	m.up = true
	m.cl.mu.Unlock()
	go m.srv.Serve(lis) //nolint:errcheck
}

func (m *fakeMember) addr() string { return m.lis.Addr().String() }

// kill stops the member (like kill -9: it answers nothing any more).
func (m *fakeMember) kill() {
	m.cl.mu.Lock()
	m.up = false
	m.cl.mu.Unlock()
	m.srv.Stop()
}

func (fc *fakeCluster) stop() {
	for _, m := range fc.members {
		m.srv.Stop()
	}
}

func (fc *fakeCluster) count(id uint32, method string) int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.members[id].calls[method]
}

func (fc *fakeCluster) total(method string) int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	n := 0
	for _, m := range fc.members {
		n += m.calls[method]
	}
	return n
}

func (fc *fakeCluster) status(id uint32) *rolisv1.StatusResponse {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return proto.Clone(fc.members[id].st).(*rolisv1.StatusResponse)
}

func (fc *fakeCluster) leader() uint32 {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for id, m := range fc.members {
		if m.up && m.st.Role == rolisv1.Role_LEADER {
			return id
		}
	}
	return 0
}

var errUnimplemented = status.Error(codes.Unimplemented,
	"replication not configured: this node runs without replication (start rolisd with --peers to replicate)")

type fakeAdmin struct {
	rolisv1.UnimplementedAdminServer
	m *fakeMember
}

func (a *fakeAdmin) lock(method string) (*fakeCluster, *fakeMember) {
	fc := a.m.cl
	fc.mu.Lock()
	a.m.calls[method]++
	return fc, a.m
}

func (a *fakeAdmin) Status(context.Context, *rolisv1.StatusRequest) (*rolisv1.StatusResponse, error) {
	fc, m := a.lock("Status")
	defer fc.mu.Unlock()
	st := proto.Clone(m.st).(*rolisv1.StatusResponse)
	st.Healthy = m.healthy
	return st, nil
}

func (a *fakeAdmin) PrepareFailover(_ context.Context, r *rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error) {
	fc, m := a.lock("PrepareFailover")
	defer fc.mu.Unlock()
	if fc.unimplemented {
		return nil, errUnimplemented
	}
	// Promise on every live member that has not promised a higher epoch.
	var promised []uint32
	best := m.st.GetWatermark()
	for id, o := range fc.members {
		if !o.up || o.st.PromisedEpoch >= r.NewEpoch {
			continue
		}
		promised = append(promised, id)
		if o.st.GetWatermark().GetEpoch() > best.GetEpoch() ||
			(o.st.GetWatermark().GetEpoch() == best.GetEpoch() && o.st.GetWatermark().GetTs() > best.GetTs()) {
			best = o.st.GetWatermark()
		}
	}
	if len(promised) < len(fc.members)/2+1 {
		return nil, status.Errorf(codes.Unavailable, "only %d promises of epoch %d", len(promised), r.NewEpoch)
	}
	for _, id := range promised {
		o := fc.members[id]
		o.st.PromisedEpoch = r.NewEpoch
		if o.st.Role == rolisv1.Role_LEADER { // fenced: a deposed leader stops
			o.st.Role = rolisv1.Role_FOLLOWER
		}
	}
	m.st.Role = rolisv1.Role_CANDIDATE
	cut := map[uint64]uint64{}
	for e, ts := range r.GetLastDecided().GetCut() {
		cut[e] = ts
	}
	if e := r.GetLastDecided().GetEpoch(); e > 0 {
		cut[e] = best.GetTs()
	}
	return &rolisv1.PrepareFailoverResponse{
		Proposed:   &rolisv1.EpochRecord{Epoch: r.NewEpoch, Cut: cut, LeaderId: m.id, Watermark: proto.Clone(best).(*rolisv1.LogKey)},
		PromisedBy: promised,
	}, nil
}

func (a *fakeAdmin) OpenEpoch(_ context.Context, r *rolisv1.OpenEpochRequest) (*rolisv1.OpenEpochResponse, error) {
	fc, m := a.lock("OpenEpoch")
	defer fc.mu.Unlock()
	if fc.unimplemented {
		return nil, errUnimplemented
	}
	if m.st.PromisedEpoch != r.GetRecord().GetEpoch() || m.st.Role != rolisv1.Role_CANDIDATE {
		return nil, status.Errorf(codes.FailedPrecondition, "not the candidate of epoch %d", r.GetRecord().GetEpoch())
	}
	m.st.Role = rolisv1.Role_LEADER
	m.st.Epoch = r.Record.Epoch
	m.st.Decided = r.Record
	m.st.LeaderId = m.id
	m.st.Watermark = &rolisv1.LogKey{Epoch: r.Record.Epoch, Ts: r.Record.GetWatermark().GetTs()}
	return &rolisv1.OpenEpochResponse{Watermark: m.st.Watermark}, nil
}

func (a *fakeAdmin) AnnounceLeader(_ context.Context, r *rolisv1.AnnounceLeaderRequest) (*rolisv1.AnnounceLeaderResponse, error) {
	fc, m := a.lock("AnnounceLeader")
	defer fc.mu.Unlock()
	if fc.unimplemented {
		return nil, errUnimplemented
	}
	if r.GetRecord().GetEpoch() < m.st.PromisedEpoch && r.GetRecord().GetEpoch() < m.st.GetDecided().GetEpoch() {
		return nil, status.Error(codes.FailedPrecondition, "stale record")
	}
	m.st.Decided = r.Record
	m.st.LeaderId = r.Record.LeaderId
	if m.id != r.Record.LeaderId {
		m.st.Role = rolisv1.Role_FOLLOWER
		m.st.Epoch = r.Record.Epoch
		m.st.LeaderAddress = r.LeaderClientAddress
	}
	return &rolisv1.AnnounceLeaderResponse{}, nil
}

func (a *fakeAdmin) ChangeMembership(_ context.Context, r *rolisv1.ChangeMembershipRequest) (*rolisv1.ChangeMembershipResponse, error) {
	fc, m := a.lock("ChangeMembership")
	defer fc.mu.Unlock()
	if fc.unimplemented {
		return nil, errUnimplemented
	}
	if m.st.Role != rolisv1.Role_LEADER {
		return nil, status.Error(codes.FailedPrecondition, "not the leader")
	}
	for _, o := range fc.members {
		o.st.Members = r.Members
	}
	return &rolisv1.ChangeMembershipResponse{Members: r.Members}, nil
}

// add makes a new member (a scaled-up pod) that knows the given membership.
func (fc *fakeCluster) add(id uint32) *fakeMember {
	fc.mu.Lock()
	var ms []*rolisv1.Member
	for _, o := range fc.members {
		ms = o.st.Members
		break
	}
	m := &fakeMember{cl: fc, id: id, calls: map[string]int{}, healthy: true, st: &rolisv1.StatusResponse{
		Id: id, Role: rolisv1.Role_FOLLOWER, Healthy: true, Version: "fake", Members: ms,
	}}
	fc.members[id] = m
	fc.mu.Unlock()
	m.start("127.0.0.1:0")
	return m
}
