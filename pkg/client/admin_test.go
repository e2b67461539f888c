package client

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"google.golang.org/grpc"
)

// fakeMember is an admin server that records the failover calls it gets.
type fakeMember struct {
	rolisv1.UnimplementedAdminServer
	st        *rolisv1.StatusResponse
	decideOK  bool
	mu        sync.Mutex
	calls     []string
	announced *rolisv1.AnnounceLeaderRequest
}

func (f *fakeMember) log(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeMember) Status(context.Context, *rolisv1.StatusRequest) (*rolisv1.StatusResponse, error) {
	return f.st, nil
}

func (f *fakeMember) PrepareFailover(_ context.Context, r *rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error) {
	f.log(fmt.Sprintf("prepare %d from %d", r.NewEpoch, r.GetLastDecided().GetEpoch()))
	return &rolisv1.PrepareFailoverResponse{
		Proposed:   &rolisv1.EpochRecord{Epoch: r.NewEpoch, Cut: map[uint64]uint64{r.GetLastDecided().GetEpoch(): 77}, Watermark: &rolisv1.LogKey{Epoch: r.GetLastDecided().GetEpoch(), Ts: 77}},
		PromisedBy: []uint32{1, 2, 3},
	}, nil
}

func (f *fakeMember) DecideEpoch(_ context.Context, r *rolisv1.DecideEpochRequest) (*rolisv1.DecideEpochResponse, error) {
	f.log(fmt.Sprintf("decide %d leader %d expect %d", r.Record.Epoch, r.Record.LeaderId, r.ExpectedPreviousEpoch))
	if !f.decideOK {
		return &rolisv1.DecideEpochResponse{Decided: false, Current: &rolisv1.EpochRecord{Epoch: 99, LeaderId: 3}}, nil
	}
	return &rolisv1.DecideEpochResponse{Decided: true, Current: r.Record}, nil
}

func (f *fakeMember) OpenEpoch(_ context.Context, r *rolisv1.OpenEpochRequest) (*rolisv1.OpenEpochResponse, error) {
	f.log(fmt.Sprintf("open %d", r.Record.Epoch))
	return &rolisv1.OpenEpochResponse{Watermark: r.Record.Watermark}, nil
}

func (f *fakeMember) AnnounceLeader(_ context.Context, r *rolisv1.AnnounceLeaderRequest) (*rolisv1.AnnounceLeaderResponse, error) {
	f.log(fmt.Sprintf("announce %d at %s", r.Record.LeaderId, r.LeaderClientAddress))
	return &rolisv1.AnnounceLeaderResponse{}, nil
}

// startMembers starts one fake admin server per status on host:port (port 0
// = any), and fills in the members list of every status.
func startMembers(t *testing.T, hosts []string, port int, sts []*rolisv1.StatusResponse) ([]*fakeMember, []string) {
	t.Helper()
	var fakes []*fakeMember
	var addrs []string
	var members []*rolisv1.Member
	for i, st := range sts {
		lis, err := net.Listen("tcp", fmt.Sprintf("%s:%d", hosts[i], port))
		if err != nil {
			t.Skipf("cannot listen on %s: %v", hosts[i], err)
		}
		if port == 0 && len(hosts) > 1 && hosts[0] != hosts[1] {
			port = lis.Addr().(*net.TCPAddr).Port
		}
		f := &fakeMember{st: st, decideOK: true}
		s := grpc.NewServer()
		rolisv1.RegisterAdminServer(s, f)
		go s.Serve(lis)
		t.Cleanup(s.Stop)
		fakes = append(fakes, f)
		addrs = append(addrs, lis.Addr().String())
		members = append(members, &rolisv1.Member{Id: st.Id, Address: fmt.Sprintf("%s:%d", hosts[i], 9000+i)})
	}
	for _, st := range sts {
		st.Members = members
	}
	return fakes, addrs
}

func threeStatuses() []*rolisv1.StatusResponse {
	return []*rolisv1.StatusResponse{
		{Id: 1, Role: rolisv1.Role_FOLLOWER, Epoch: 3, PromisedEpoch: 4, Watermark: &rolisv1.LogKey{Epoch: 3, Ts: 50},
			Decided: &rolisv1.EpochRecord{Epoch: 3}},
		{Id: 2, Role: rolisv1.Role_FOLLOWER, Epoch: 3, Watermark: &rolisv1.LogKey{Epoch: 3, Ts: 80},
			Decided: &rolisv1.EpochRecord{Epoch: 3}, LeaderAddress: ""},
		{Id: 3, Role: rolisv1.Role_FOLLOWER, Epoch: 2, Watermark: &rolisv1.LogKey{Epoch: 2, Ts: 999},
			Decided: &rolisv1.EpochRecord{Epoch: 2}},
	}
}

func newAdmin(t *testing.T, addrs []string) *Admin {
	t.Helper()
	a, err := NewAdmin(context.Background(), Config{Endpoints: addrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func TestFailoverPromotesTheMostAdvancedMemberThroughEverySteps(t *testing.T) {
	fakes, addrs := startMembers(t, []string{"127.0.0.1", "127.0.0.1", "127.0.0.1"}, 0, threeStatuses())
	a := newAdmin(t, addrs)
	var steps []string
	res, err := a.Failover(ctxT(t), FailoverOptions{LeaderClientAddress: "127.0.0.1:7070",
		Step: func(f string, args ...any) { steps = append(steps, fmt.Sprintf(f, args...)) }})
	if err != nil {
		t.Fatal(err)
	}
	// Member 2: epoch 3 (as 1) but a higher watermark; member 3 has the
	// highest ts but an older epoch.
	if res.Candidate != 2 || res.Record.GetEpoch() != 5 || res.Record.GetLeaderId() != 2 {
		t.Fatalf("result %+v", res)
	}
	want := "prepare 5 from 3,decide 5 leader 2 expect 3,open 5,announce 2 at 127.0.0.1:7070"
	if got := strings.Join(fakes[1].calls, ","); got != want {
		t.Fatalf("candidate calls %s\nwant %s", got, want)
	}
	for _, i := range []int{0, 2} {
		if got := strings.Join(fakes[i].calls, ","); got != "announce 2 at 127.0.0.1:7070" {
			t.Errorf("member %d calls %s", i+1, got)
		}
	}
	if len(steps) < 7 {
		t.Errorf("steps: %q", steps)
	}
}

func TestFailoverToAChosenMemberAndGivingUpWhenAnotherEpochWon(t *testing.T) {
	fakes, addrs := startMembers(t, []string{"127.0.0.1", "127.0.0.1", "127.0.0.1"}, 0, threeStatuses())
	fakes[2].decideOK = false
	a := newAdmin(t, addrs)
	_, err := a.Failover(ctxT(t), FailoverOptions{To: 3})
	if err == nil || !strings.Contains(err.Error(), "epoch 99 was decided first") {
		t.Fatalf("err %v", err)
	}
	if got := strings.Join(fakes[2].calls, ","); strings.Contains(got, "open") {
		t.Fatalf("opened after losing the decision: %s", got)
	}
	if _, err := a.Failover(ctxT(t), FailoverOptions{To: 7}); err == nil {
		t.Fatal("failover to an unknown member")
	}
}

// With one admin endpoint, the other members are found at their
// replication host with the same admin port (a StatefulSet's layout); here
// three loopback addresses stand for three pods.
func TestClusterStatusFindsUnlistedMembersOnTheirHostsWithTheSamePort(t *testing.T) {
	_, addrs := startMembers(t, []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}, 0, threeStatuses())
	a := newAdmin(t, addrs[:1])
	ms, err := a.ClusterStatus(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("%d members: %+v", len(ms), ms)
	}
	for i, m := range ms {
		if m.ID != uint32(i+1) || !m.Reachable() || m.AdminAddress != addrs[i] {
			t.Errorf("member %d: %+v", i+1, m)
		}
	}
}

// On one host, members found through the admin address they advertise.
func TestClusterStatusFindsUnlistedMembersAtTheirAdvertisedAdminAddress(t *testing.T) {
	sts := threeStatuses()
	_, addrs := startMembers(t, []string{"127.0.0.1", "127.0.0.1", "127.0.0.1"}, 0, sts)
	for i, m := range sts[0].Members { // one list, shared by the three statuses
		m.AdminAddress = addrs[i]
	}
	ms, err := newAdmin(t, addrs[:1]).ClusterStatus(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("%+v", ms)
	}
	for i, m := range ms {
		if !m.Reachable() || m.ID != uint32(i+1) || m.AdminAddress != addrs[i] {
			t.Errorf("member %d: %+v", i+1, m)
		}
	}
}

// On one host with distinct ports, an unlisted member that advertises no
// admin address cannot be found: it is reported unreachable, with its id
// and replication address.
func TestClusterStatusReportsUnlistedMembersOnOneHostAsUnreachable(t *testing.T) {
	_, addrs := startMembers(t, []string{"127.0.0.1", "127.0.0.1", "127.0.0.1"}, 0, threeStatuses())
	a := newAdmin(t, addrs[:2])
	ms, err := a.ClusterStatus(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || !ms[0].Reachable() || !ms[1].Reachable() || ms[2].Reachable() || ms[2].ID != 3 || ms[2].ReplicationAddress == "" {
		t.Fatalf("%+v", ms)
	}
}
