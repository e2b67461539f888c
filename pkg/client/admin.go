package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// Admin is a client of the admin API of one or more rolisd members. Its
// Config.Endpoints are admin addresses (--admin-listen). The messages are the
// wire types of package rolisv1.
type Admin struct {
	c *Client
}

// NewAdmin returns an admin client of the members at cfg.Endpoints.
func NewAdmin(ctx context.Context, cfg Config) (*Admin, error) {
	c, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Admin{c: c}, nil
}

// Close closes the connections.
func (a *Admin) Close() error { return a.c.Close() }

// Endpoints returns the configured admin addresses.
func (a *Admin) Endpoints() []string { return slices.Clone(a.c.cfg.Endpoints) }

func (a *Admin) rpc(addr string) (rolisv1.AdminClient, error) {
	if addr == "" {
		addr = a.c.cfg.Endpoints[0]
	}
	ep, err := a.c.endpoint(addr)
	if err != nil {
		return nil, err
	}
	return ep.admin[ep.pick()], nil
}

// Status asks the member at addr ("" = the first endpoint) for its status.
func (a *Admin) Status(ctx context.Context, addr string) (*rolisv1.StatusResponse, error) {
	cl, err := a.rpc(addr)
	if err != nil {
		return nil, err
	}
	r, err := cl.Status(ctx, &rolisv1.StatusRequest{})
	return r, wrapErr("Status", err, nil)
}

// PrepareFailover asks the candidate at addr to run phase 1 of a failover to
// newEpoch from the last decided record, and returns its proposed record.
func (a *Admin) PrepareFailover(ctx context.Context, addr string, newEpoch uint64, lastDecided *rolisv1.EpochRecord) (*rolisv1.PrepareFailoverResponse, error) {
	cl, err := a.rpc(addr)
	if err != nil {
		return nil, err
	}
	r, err := cl.PrepareFailover(ctx, &rolisv1.PrepareFailoverRequest{NewEpoch: newEpoch, LastDecided: lastDecided})
	return r, wrapErr("PrepareFailover", err, nil)
}

// DecideEpoch decides record by compare-and-set on the control stream, if the
// record in force is still of epoch expectedPrevious.
func (a *Admin) DecideEpoch(ctx context.Context, addr string, record *rolisv1.EpochRecord, expectedPrevious uint64) (*rolisv1.DecideEpochResponse, error) {
	cl, err := a.rpc(addr)
	if err != nil {
		return nil, err
	}
	r, err := cl.DecideEpoch(ctx, &rolisv1.DecideEpochRequest{Record: record, ExpectedPreviousEpoch: expectedPrevious})
	return r, wrapErr("DecideEpoch", err, nil)
}

// OpenEpoch asks the candidate at addr to re-propose, fill, put barriers and
// open for writes under the decided record.
func (a *Admin) OpenEpoch(ctx context.Context, addr string, record *rolisv1.EpochRecord) (*rolisv1.OpenEpochResponse, error) {
	cl, err := a.rpc(addr)
	if err != nil {
		return nil, err
	}
	r, err := cl.OpenEpoch(ctx, &rolisv1.OpenEpochRequest{Record: record})
	return r, wrapErr("OpenEpoch", err, nil)
}

// AnnounceLeader tells the member at addr the decided record and the
// leader's client address.
func (a *Admin) AnnounceLeader(ctx context.Context, addr string, record *rolisv1.EpochRecord, leaderClientAddr string) error {
	cl, err := a.rpc(addr)
	if err != nil {
		return err
	}
	_, err = cl.AnnounceLeader(ctx, &rolisv1.AnnounceLeaderRequest{Record: record, LeaderClientAddress: leaderClientAddr})
	return wrapErr("AnnounceLeader", err, nil)
}

// ChangeMembership asks the member at addr (the leader) to move to the full
// new membership members.
func (a *Admin) ChangeMembership(ctx context.Context, addr string, members []*rolisv1.Member) (*rolisv1.ChangeMembershipResponse, error) {
	cl, err := a.rpc(addr)
	if err != nil {
		return nil, err
	}
	r, err := cl.ChangeMembership(ctx, &rolisv1.ChangeMembershipRequest{Members: members})
	return r, wrapErr("ChangeMembership", err, nil)
}

// MemberCallTimeout bounds each per-member call of ClusterStatus and of the
// announcements of Failover (within the caller's deadline), so that a member
// that does not answer (paused, partitioned) only costs this much.
var MemberCallTimeout = 3 * time.Second

// MemberStatus is one member as seen by ClusterStatus.
type MemberStatus struct {
	ID                 uint32
	AdminAddress       string // "" when no admin address of it is known
	ReplicationAddress string
	ClientAddress      string                  // as advertised in the members list, if at all
	Status             *rolisv1.StatusResponse // nil when unreachable
	Err                error                   // why it is unreachable
}

// Reachable reports whether the member answered.
func (m *MemberStatus) Reachable() bool { return m.Status != nil }

// ClusterStatus asks every configured endpoint for its status, then the
// members they report that were not among them: at the admin address they
// advertise (Member.admin_address) or, when none is advertised, at a guess:
// their replication host with the admin port of a listed endpoint (true of a
// Kubernetes StatefulSet, where every pod uses the same ports). An answer is
// accepted only if the member answering has the expected id.
// Members that cannot be reached are returned with Err set. The result is
// sorted by id; members whose id is unknown (an endpoint that did not answer)
// come last with ID 0.
func (a *Admin) ClusterStatus(ctx context.Context) ([]MemberStatus, error) {
	eps := a.c.cfg.Endpoints
	type answer struct {
		addr string
		st   *rolisv1.StatusResponse
		err  error
	}
	ask := func(addrs []string) []answer {
		out := make([]answer, len(addrs))
		var wg sync.WaitGroup
		for i, addr := range addrs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A member that is paused (or whose host vanished) never
				// answers: do not let it hold up the others.
				mctx, cancel := context.WithTimeout(ctx, MemberCallTimeout)
				defer cancel()
				st, err := a.Status(mctx, addr)
				out[i] = answer{addr, st, err}
			}()
		}
		wg.Wait()
		return out
	}
	byID := map[uint32]*MemberStatus{}
	var unknown []MemberStatus
	queried := map[string]bool{}
	advertised := map[uint32]string{}
	add := func(ans []answer, wantID map[string]uint32) {
		for _, an := range ans {
			queried[an.addr] = true
			if an.err != nil {
				if id, ok := wantID[an.addr]; ok {
					if m := byID[id]; m != nil && m.Status == nil && m.Err == nil {
						m.Err = an.err
					}
					continue
				}
				unknown = append(unknown, MemberStatus{AdminAddress: an.addr, Err: an.err})
				continue
			}
			if id, ok := wantID[an.addr]; ok && an.st.GetId() != id {
				continue // a guess that reached another member
			}
			m := byID[an.st.GetId()]
			if m == nil {
				m = &MemberStatus{ID: an.st.GetId()}
				byID[m.ID] = m
			}
			m.AdminAddress, m.Status, m.Err = an.addr, an.st, nil
			for _, mem := range an.st.GetMembers() {
				o := byID[mem.GetId()]
				if o == nil {
					o = &MemberStatus{ID: mem.GetId()}
					byID[o.ID] = o
				}
				if o.ReplicationAddress == "" {
					o.ReplicationAddress = mem.GetAddress()
				}
				if o.ClientAddress == "" {
					o.ClientAddress = mem.GetClientAddress()
				}
				if advertised[o.ID] == "" {
					advertised[o.ID] = mem.GetAdminAddress()
				}
			}
		}
	}
	add(ask(eps), nil)

	// Guess the admin addresses of reported members that no endpoint reached.
	var guesses []string
	wantID := map[string]uint32{}
	for id, m := range byID {
		if m.Status != nil {
			continue
		}
		if a := cleanAddr(advertised[id]); a != "" && !queried[a] && wantID[a] == 0 {
			guesses = append(guesses, a)
			wantID[a] = id
			continue
		}
		if m.ReplicationAddress == "" {
			continue
		}
		host, _, err := net.SplitHostPort(m.ReplicationAddress)
		if err != nil {
			continue
		}
		for _, ep := range eps {
			_, port, err := net.SplitHostPort(ep)
			if err != nil {
				continue
			}
			g := net.JoinHostPort(host, port)
			if queried[g] || wantID[g] != 0 {
				continue
			}
			guesses = append(guesses, g)
			wantID[g] = id
			break
		}
	}
	if len(guesses) > 0 {
		add(ask(guesses), wantID)
	}

	out := make([]MemberStatus, 0, len(byID)+len(unknown))
	for _, m := range byID {
		if m.Status == nil && m.Err == nil {
			m.Err = errors.New("no admin address known for this member: list it in --endpoint")
		}
		out = append(out, *m)
	}
	slices.SortFunc(out, func(x, y MemberStatus) int { return cmp.Compare(x.ID, y.ID) })
	out = append(out, unknown...)
	if len(byID) == 0 {
		errs := make([]error, len(unknown))
		for i := range unknown {
			errs[i] = fmt.Errorf("%s: %w", unknown[i].AdminAddress, unknown[i].Err)
		}
		return out, errors.Join(errs...)
	}
	return out, nil
}

// CompareLogKey orders replication keys, epoch first.
func CompareLogKey(a, b *rolisv1.LogKey) int {
	if c := cmp.Compare(a.GetEpoch(), b.GetEpoch()); c != 0 {
		return c
	}
	return cmp.Compare(a.GetTs(), b.GetTs())
}
