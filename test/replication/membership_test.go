package replication_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
)

// memberOf is member id of the test cluster as a ChangeMembership entry.
func memberOf(cl *cluster, id int) *rolisv1.Member {
	m := cl.member(id)
	return &rolisv1.Member{Id: uint32(id), Address: m.ReplAddr, AdminAddress: m.AdminAddr, ClientAddress: m.ClientAddr}
}

// membership reads the configuration in force from the leader.
func membership(t *testing.T, a *client.Admin) *client.Membership {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := a.CurrentMembership(ctx)
	if err != nil {
		t.Fatalf("membership: %v", err)
	}
	return m
}

// changeMembership retries while the answer is UNAVAILABLE (a new member
// still catching up, a change to send again) for a bounded time.
func changeMembership(t *testing.T, a *client.Admin, change func(context.Context) (*rolisv1.ChangeMembershipResponse, error)) *rolisv1.ChangeMembershipResponse {
	t.Helper()
	var last error
	for attempt := 0; attempt < 6; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		resp, err := change(ctx)
		cancel()
		if err == nil {
			return resp
		}
		last = err
		if client.Code(err) != codes.Unavailable {
			break
		}
		t.Logf("membership change: %v (retrying)", err)
	}
	t.Fatalf("membership change failed: %v", last)
	return nil
}

func ids(ms []*rolisv1.Member) []uint32 {
	var out []uint32
	for _, m := range ms {
		out = append(out, m.GetId())
	}
	slices.Sort(out)
	return out
}

// Change: 3 → 4 → 5 members under the bank and unique-insert load, one
// member at a time through the leader's ChangeMembership (each new member
// started with --peers listing the new membership, catching up by state
// transfer first); then kill -9 of the leader of the 5-member configuration
// and a failover among the other four (the killed member restarts empty
// with its old --peers and learns the configuration); then 5 → 4 → 3.
// Invariants: no acknowledged transaction lost, bank total kept, single-key
// histories linearizable; bad requests (duplicate ids, two members at once,
// a new member without an address or that is not running, removing the
// leader) are refused with a clear error and change nothing; a removed
// member does not vote.
func TestMembershipThreeToFiveToThreeUnderLoadWithLeaderKillLosesNothing(t *testing.T) {
	cl := startCluster(t, clusterOptions{members: 5, initial: 3})
	leader, _ := cl.failover(1, 1, 2, 3)
	a := cl.admin()
	if got := ids(membership(t, a).Members); !slices.Equal(got, []uint32{1, 2, 3}) {
		t.Fatalf("initial membership %v, want [1 2 3]", got)
	}
	w := newWorkload(t, cl.clientAddrs()[:3])
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w.Setup(ctx)
	w.Start(3, 1, 2, 11)
	time.Sleep(time.Second)

	for _, id := range []int{4, 5} {
		if err := cl.member(id).Restart(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		before := w.Acked()
		start := time.Now()
		resp := changeMembership(t, a, func(ctx context.Context) (*rolisv1.ChangeMembershipResponse, error) {
			return a.AddMember(ctx, memberOf(cl, id))
		})
		t.Logf("member %d added in %v (configuration %d: %v); %d transactions acknowledged meanwhile",
			id, time.Since(start), resp.GetConfig(), ids(resp.GetMembers()), w.Acked()-before)
		time.Sleep(500 * time.Millisecond)
	}
	cur := membership(t, a)
	if got := cur.IDs(); !slices.Equal(got, []uint32{1, 2, 3, 4, 5}) || cur.Config != 2 {
		t.Fatalf("after two adds: configuration %d %v, want 2 [1 2 3 4 5]", cur.Config, got)
	}
	// Adding a member that is in already changes nothing.
	resp := changeMembership(t, a, func(ctx context.Context) (*rolisv1.ChangeMembershipResponse, error) {
		return a.AddMember(ctx, memberOf(cl, 5))
	})
	if resp.GetConfig() != 2 {
		t.Errorf("re-adding member 5 moved the configuration to %d", resp.GetConfig())
	}

	// Bad requests: a clear error, and nothing changes.
	full := []*rolisv1.Member{memberOf(cl, 1), memberOf(cl, 2), memberOf(cl, 3), memberOf(cl, 4), memberOf(cl, 5)}
	bad := []struct {
		name    string
		members []*rolisv1.Member
		code    codes.Code
		says    string
	}{
		{"duplicate id", append(slices.Clone(full), memberOf(cl, 5)), codes.InvalidArgument, "listed twice"},
		{"two removed at once", full[:3], codes.InvalidArgument, "one member at a time"},
		{"new member without an address", append(slices.Clone(full), &rolisv1.Member{Id: 6}), codes.InvalidArgument, "no replication address"},
		{"new member that is not running", append(slices.Clone(full), &rolisv1.Member{Id: 6, Address: "127.0.0.1:1"}), codes.Unavailable, "did not catch up"},
		{"the leader removes itself", slices.DeleteFunc(slices.Clone(full), func(m *rolisv1.Member) bool { return m.GetId() == leader }), codes.FailedPrecondition, "fail over"},
	}
	for _, b := range bad {
		bctx, bcancel := context.WithTimeout(ctx, 20*time.Second)
		_, err := a.ChangeMembership(bctx, cur.LeaderAdmin, b.members)
		bcancel()
		if client.Code(err) != b.code || err == nil || !strings.Contains(err.Error(), b.says) {
			t.Errorf("%s: got %v (%v), want %v saying %q", b.name, client.Code(err), err, b.code, b.says)
		}
		if now := membership(t, a); now.Config != 2 || !slices.Equal(now.IDs(), []uint32{1, 2, 3, 4, 5}) {
			t.Fatalf("%s changed the membership to configuration %d %v", b.name, now.Config, now.IDs())
		}
	}

	// Kill the leader of the 5-member configuration; the others fail over
	// (a majority of five: the new members count).
	if _, err := cl.member(int(leader)).Kill(); err != nil {
		t.Fatal(err)
	}
	next, took := cl.failover(2, 2, 3, 4, 5)
	t.Logf("leader %d killed; member %d leads after %v", leader, next, took)
	time.Sleep(time.Second)
	// Restarted empty with its old --peers (1..3): it learns the
	// configuration from the others and catches up.
	if err := cl.member(int(leader)).Restart(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cl.waitCaughtUp(next, 30*time.Second); err != nil {
		t.Fatalf("after the failover: %v", err)
	}

	for _, id := range []uint32{5, 4} {
		resp := changeMembership(t, a, func(ctx context.Context) (*rolisv1.ChangeMembershipResponse, error) {
			return a.RemoveMember(ctx, id)
		})
		t.Logf("member %d removed (configuration %d: %v)", id, resp.GetConfig(), ids(resp.GetMembers()))
		time.Sleep(500 * time.Millisecond)
	}
	cur = membership(t, a)
	if got := cur.IDs(); !slices.Equal(got, []uint32{1, 2, 3}) || cur.Config != 4 {
		t.Fatalf("after two removes: configuration %d %v, want 4 [1 2 3]", cur.Config, got)
	}
	// A removed member does not vote: it cannot be a candidate (and asking
	// it does not disturb the leader).
	rm := cl.admin(4)
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := rm.PrepareFailover(pctx, "", 100, nil)
	pcancel()
	if client.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "not in configuration") {
		t.Errorf("PrepareFailover on removed member 4: %v, want FAILED_PRECONDITION (not in configuration)", err)
	}
	if l := cl.leader(); l != next {
		t.Errorf("member %d leads after asking a removed member to prepare, want %d", l, next)
	}
	for _, id := range []int{4, 5} {
		if _, err := cl.member(id).Stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // writes go on in the 3-member configuration
	w.Stop()
	t.Log(w.check(cl, next))
}
