package client

import (
	"context"
	"errors"
	"fmt"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"google.golang.org/protobuf/proto"
)

// FailoverOptions configures Admin.Failover.
type FailoverOptions struct {
	// To picks the candidate by member id; 0 picks the most advanced
	// reachable member (highest epoch, then highest watermark, then lowest id).
	To uint32
	// LeaderClientAddress is announced as the new leader's client address
	// when the candidate does not report one in its status.
	LeaderClientAddress string
	// Step, if set, is called with a line describing each step.
	Step func(format string, args ...any)
}

// FailoverResult is what a failover decided.
type FailoverResult struct {
	Candidate     uint32
	Record        *rolisv1.EpochRecord // the decided record (epoch, V)
	Watermark     *rolisv1.LogKey      // G' reported by OpenEpoch
	LeaderAddress string
	// AnnounceErrors holds the members that did not take the announcement
	// (they learn the leader later, from the replication stream).
	AnnounceErrors map[uint32]error
}

// DeciderOperator is the Status decider of a member whose epoch records
// the operator decides (rolisd --decider=operator); such a member refuses
// DecideEpoch, and Failover refuses before it prepares anything.
const DeciderOperator = "operator"

// Failover drives the failover protocol through the admin API, as the
// operator does but keeping the epoch decision on the members' control
// stream (DecideEpoch) instead of in Kubernetes:
//
//  1. Status of every member; pick the candidate; the new epoch is one above
//     every epoch any member has seen (in force, promised or decided), and
//     the last decided record is the newest any member knows.
//  2. PrepareFailover(new epoch, last decided) on the candidate: it gathers
//     promises from a majority and proposes (new epoch, V') with G'.
//  3. DecideEpoch(proposed, expected previous epoch) — compare-and-set: if a
//     newer epoch was decided first, give up.
//  4. OpenEpoch(decided) on the candidate: it opens for writes once its
//     re-proposals, no-ops and barriers are on a majority.
//  5. AnnounceLeader(decided, leader client address) to every member.
//
// A cluster whose members say the operator decides its records (Status
// decider "operator") is refused after step 1, before anything changes.
func (a *Admin) Failover(ctx context.Context, opts FailoverOptions) (*FailoverResult, error) {
	step := opts.Step
	if step == nil {
		step = func(string, ...any) {}
	}
	members, err := a.ClusterStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	var reachable []MemberStatus
	var maxEpoch uint64
	var last *rolisv1.EpochRecord
	for _, m := range members {
		if !m.Reachable() {
			step("status: member %d (%s) unreachable: %v", m.ID, m.AdminAddress, m.Err)
			continue
		}
		st := m.Status
		step("status: member %d %s epoch=%d promised=%d watermark=%d.%d", m.ID, RoleName(st.GetRole()),
			st.GetEpoch(), st.GetPromisedEpoch(), st.GetWatermark().GetEpoch(), st.GetWatermark().GetTs())
		if st.GetDecider() == DeciderOperator {
			// The members would refuse DecideEpoch; asking them to prepare
			// first would only depose the operator's leader.
			return nil, fmt.Errorf("member %d: the operator decides this cluster's epoch records (--decider=operator): "+
				"fail over through the operator, not through the admin API's control stream", m.ID)
		}
		reachable = append(reachable, m)
		maxEpoch = max(maxEpoch, st.GetEpoch(), st.GetPromisedEpoch(), st.GetDecided().GetEpoch())
		if d := st.GetDecided(); d != nil && (last == nil || d.GetEpoch() > last.GetEpoch()) {
			last = d
		}
	}
	cand, err := pickCandidate(reachable, opts.To)
	if err != nil {
		return nil, err
	}
	if last == nil {
		last = &rolisv1.EpochRecord{}
	}
	newEpoch := maxEpoch + 1
	res := &FailoverResult{Candidate: cand.ID, AnnounceErrors: map[uint32]error{}}
	step("candidate: member %d at %s; last decided epoch %d; new epoch %d", cand.ID, cand.AdminAddress, last.GetEpoch(), newEpoch)

	prep, err := a.PrepareFailover(ctx, cand.AdminAddress, newEpoch, last)
	if err != nil {
		return res, fmt.Errorf("prepare: %w", err)
	}
	rec := proto.Clone(prep.GetProposed()).(*rolisv1.EpochRecord)
	if rec.GetEpoch() == 0 {
		rec.Epoch = newEpoch
	}
	if rec.GetLeaderId() == 0 {
		rec.LeaderId = cand.ID
	}
	step("prepare: promised by %v; proposed epoch %d cut %v watermark %d.%d", prep.GetPromisedBy(), rec.GetEpoch(),
		rec.GetCut(), rec.GetWatermark().GetEpoch(), rec.GetWatermark().GetTs())

	dec, err := a.DecideEpoch(ctx, cand.AdminAddress, rec, last.GetEpoch())
	if err != nil {
		return res, fmt.Errorf("decide: %w", err)
	}
	if !dec.GetDecided() {
		return res, fmt.Errorf("decide: epoch %d was decided first (by leader %d); giving up",
			dec.GetCurrent().GetEpoch(), dec.GetCurrent().GetLeaderId())
	}
	if dec.GetCurrent() != nil && dec.GetCurrent().GetEpoch() == rec.GetEpoch() {
		rec = dec.GetCurrent()
	}
	res.Record = rec
	step("decide: epoch %d decided (previous %d)", rec.GetEpoch(), last.GetEpoch())

	open, err := a.OpenEpoch(ctx, cand.AdminAddress, rec)
	if err != nil {
		return res, fmt.Errorf("open: %w", err)
	}
	res.Watermark = open.GetWatermark()
	step("open: member %d leads epoch %d, watermark %d.%d", cand.ID, rec.GetEpoch(),
		open.GetWatermark().GetEpoch(), open.GetWatermark().GetTs())

	res.LeaderAddress = opts.LeaderClientAddress
	if res.LeaderAddress == "" {
		res.LeaderAddress = cand.ClientAddress
	}
	if st, err := a.Status(ctx, cand.AdminAddress); err == nil && st.GetLeaderAddress() != "" {
		res.LeaderAddress = st.GetLeaderAddress()
	}
	for _, m := range members {
		if m.AdminAddress == "" || (!m.Reachable() && m.ID == 0) {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, MemberCallTimeout)
		err := a.AnnounceLeader(actx, m.AdminAddress, rec, res.LeaderAddress)
		cancel()
		if err != nil {
			res.AnnounceErrors[m.ID] = err
			step("announce: member %d (%s): %v", m.ID, m.AdminAddress, err)
			continue
		}
		step("announce: member %d told leader %d at %q", m.ID, cand.ID, res.LeaderAddress)
	}
	return res, nil
}

// pickCandidate returns member to, or the most advanced member.
func pickCandidate(ms []MemberStatus, to uint32) (MemberStatus, error) {
	if len(ms) == 0 {
		return MemberStatus{}, errors.New("no member reachable")
	}
	if to != 0 {
		for _, m := range ms {
			if m.ID == to {
				return m, nil
			}
		}
		return MemberStatus{}, fmt.Errorf("member %d is not reachable", to)
	}
	best := -1
	for i, m := range ms {
		if m.Status.GetRole() == rolisv1.Role_CATCHING_UP {
			continue
		}
		if best < 0 || moreAdvanced(m, ms[best]) {
			best = i
		}
	}
	if best < 0 {
		return MemberStatus{}, errors.New("every reachable member is catching up")
	}
	return ms[best], nil
}

// moreAdvanced orders members by epoch, then watermark, then lower id.
func moreAdvanced(a, b MemberStatus) bool {
	if a.Status.GetEpoch() != b.Status.GetEpoch() {
		return a.Status.GetEpoch() > b.Status.GetEpoch()
	}
	if c := CompareLogKey(a.Status.GetWatermark(), b.Status.GetWatermark()); c != 0 {
		return c > 0
	}
	return a.ID < b.ID
}

// RoleName is the lower-case name of a role: "leader", "follower",
// "candidate", "catching_up", "standalone" or "unspecified".
func RoleName(r rolisv1.Role) string {
	switch r {
	case rolisv1.Role_LEADER:
		return "leader"
	case rolisv1.Role_FOLLOWER:
		return "follower"
	case rolisv1.Role_CANDIDATE:
		return "candidate"
	case rolisv1.Role_CATCHING_UP:
		return "catching_up"
	case rolisv1.Role_STANDALONE:
		return "standalone"
	}
	return "unspecified"
}
