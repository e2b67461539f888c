package client

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// Membership is the configuration in force as the leader reports it.
type Membership struct {
	LeaderID     uint32
	LeaderAdmin  string // admin address of the leader (where changes are asked)
	Config       uint64 // how many membership changes were made
	Members      []*rolisv1.Member
	MemberStatus []MemberStatus // every member ClusterStatus reached or heard of
}

// IDs returns the member ids, sorted.
func (m *Membership) IDs() []uint32 {
	ids := make([]uint32, 0, len(m.Members))
	for _, mem := range m.Members {
		ids = append(ids, mem.GetId())
	}
	slices.Sort(ids)
	return ids
}

// CurrentMembership finds the leader among the members reachable from the
// configured endpoints and returns the membership it reports.
func (a *Admin) CurrentMembership(ctx context.Context) (*Membership, error) {
	ms, err := a.ClusterStatus(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if m.Status.GetRole() != rolisv1.Role_LEADER {
			continue
		}
		if m.AdminAddress == "" {
			return nil, fmt.Errorf("member %d leads but no admin address of it is known: list it in --endpoint", m.ID)
		}
		return &Membership{LeaderID: m.ID, LeaderAdmin: m.AdminAddress, Config: m.Status.GetDecided().GetConfig(),
			Members: m.Status.GetMembers(), MemberStatus: ms}, nil
	}
	var seen []string
	for _, m := range ms {
		seen = append(seen, fmt.Sprintf("%d: %s", m.ID, RoleName(m.Status.GetRole())))
	}
	return nil, fmt.Errorf("no member reports itself leader (%s): elect one first (rolisctl failover)", strings.Join(seen, ", "))
}

// ParseMember parses ID=HOST:PORT (the replication address, as in --peers).
func ParseMember(s string) (*rolisv1.Member, error) {
	id, addr, ok := strings.Cut(strings.TrimSpace(s), "=")
	n, err := strconv.ParseUint(id, 10, 32)
	if !ok || err != nil || n == 0 || addr == "" {
		return nil, fmt.Errorf("member %q: want ID=HOST:PORT (a member id from 1 and its replication address, as in --peers)", s)
	}
	return &rolisv1.Member{Id: uint32(n), Address: addr}, nil
}

// AddMember adds m (started with --peers listing the new membership) to the
// configuration through the leader: one member, so that majorities of the
// old and new configurations intersect. It returns the new membership.
func (a *Admin) AddMember(ctx context.Context, m *rolisv1.Member) (*rolisv1.ChangeMembershipResponse, error) {
	cur, err := a.CurrentMembership(ctx)
	if err != nil {
		return nil, err
	}
	target := slices.Clone(cur.Members)
	if !slices.Contains(cur.IDs(), m.GetId()) {
		target = append(target, m)
	}
	return a.ChangeMembership(ctx, cur.LeaderAdmin, target)
}

// RemoveMember removes member id through the leader (which refuses to
// remove itself: fail over to another member first). Removing a member that
// is not in the configuration changes nothing.
func (a *Admin) RemoveMember(ctx context.Context, id uint32) (*rolisv1.ChangeMembershipResponse, error) {
	cur, err := a.CurrentMembership(ctx)
	if err != nil {
		return nil, err
	}
	target := slices.DeleteFunc(slices.Clone(cur.Members), func(m *rolisv1.Member) bool { return m.GetId() == id })
	return a.ChangeMembership(ctx, cur.LeaderAdmin, target)
}
