/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"fmt"
	"sort"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// CompareKeys orders replication keys (epoch, ts), epoch first.
func CompareKeys(a, b *rolisv1.LogKey) int {
	switch {
	case a.GetEpoch() != b.GetEpoch():
		if a.GetEpoch() < b.GetEpoch() {
			return -1
		}
		return 1
	case a.GetTs() != b.GetTs():
		if a.GetTs() < b.GetTs() {
			return -1
		}
		return 1
	}
	return 0
}

// MoreAdvanced reports whether member a is ahead of member b: a higher
// epoch, then a higher watermark G, then a longer log. Both must be
// reachable.
//
// The epoch is the higher of the epoch the member is in and the newest
// decided record it knows, and the log is the slots it holds: a member
// that restarted with its data directory (durability disk) answers at
// epoch 0 and watermark (0,0) until a leader's watermark covers its
// replay (docs/operations.md, "Durability"), but with the decided record
// and the slots it recovered. After a full-cluster restart those are
// what tells the members apart.
func MoreAdvanced(a, b *Member) bool {
	if ea, eb := StateEpoch(a), StateEpoch(b); ea != eb {
		return ea > eb
	}
	if c := CompareKeys(a.Status.GetWatermark(), b.Status.GetWatermark()); c != 0 {
		return c > 0
	}
	return SlotsHeld(a) > SlotsHeld(b)
}

// StateEpoch is the epoch of the state member m holds: the epoch it is
// in, or the newest decided record it knows when that is higher.
func StateEpoch(m *Member) uint64 {
	return max(m.Status.GetEpoch(), m.Status.GetDecided().GetEpoch())
}

// SlotsHeld is the end of member m's log summed over its streams (slot
// numbers are log positions, the same on every member).
func SlotsHeld(m *Member) uint64 {
	n := uint64(0)
	for _, s := range m.Status.GetStreams() {
		n += s.GetNextSlot()
	}
	return n
}

// Eligible says whether a member may become the candidate of a promotion,
// and why not.
func Eligible(m *Member) (bool, string) {
	switch {
	case !m.PodExists:
		return false, "pod does not exist"
	case m.Deleting:
		return false, "pod is being deleted"
	case !m.Reachable():
		return false, "admin API unreachable: " + ShortError(m.Err)
	case !m.Status.GetHealthy():
		return false, "reports unhealthy"
	case m.Status.GetRole() == rolisv1.Role_CATCHING_UP:
		return false, "is catching up"
	}
	return true, ""
}

// ChooseCandidate picks the member to promote: among eligible members not in
// exclude, the most advanced (MoreAdvanced: highest epoch, then highest
// watermark G, then the longest log); on a tie, one that runs the current revision, then the lowest id, so that the
// choice is deterministic.
//
// Why the most advanced: the failover protocol is safe whichever member
// drives it (PrepareFailover gathers every slot from a majority, and the new
// state is decided from that, not from the candidate's own log), but the
// most advanced member has the least to fetch before it can open, so the
// outage is shortest.
func ChooseCandidate(members []Member, exclude map[int32]bool) (*Member, error) {
	var pool []*Member
	var why []string
	for i := range members {
		m := &members[i]
		if exclude[m.ID] {
			why = append(why, fmt.Sprintf("%s excluded", m.Pod))
			continue
		}
		if ok, reason := Eligible(m); !ok {
			why = append(why, fmt.Sprintf("%s %s", m.Pod, reason))
			continue
		}
		pool = append(pool, m)
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("no eligible candidate: %v", why)
	}
	sort.SliceStable(pool, func(i, j int) bool {
		a, b := pool[i], pool[j]
		if MoreAdvanced(a, b) {
			return true
		}
		if MoreAdvanced(b, a) {
			return false
		}
		if a.Outdated != b.Outdated {
			return !a.Outdated
		}
		return a.ID < b.ID
	})
	return pool[0], nil
}

// LeaderState is the state of the leader of the decided epoch.
type LeaderState int

// Leader states.
const (
	// NoLeader: no epoch was ever decided (a new cluster).
	NoLeader LeaderState = iota
	// Serving: the decided leader is open for writes in the decided epoch.
	Serving
	// Opening: the decided leader promised the epoch but has not opened it
	// (the operator stopped between the decision and OpenEpoch); it resumes
	// with OpenEpoch of the same record.
	Opening
	// Unhealthy: the decided leader is unreachable, unhealthy, or in another
	// epoch or role.
	Unhealthy
)

func (s LeaderState) String() string {
	return [...]string{"NoLeader", "Serving", "Opening", "Unhealthy"}[s]
}

// Assessment is the leader's state under the decided record.
type Assessment struct {
	State  LeaderState
	Leader *Member // nil when NoLeader or the leader is not a known member
	Reason string
	// Gone (with Unhealthy) means the leader cannot serve its epoch again:
	// its pod is gone or being deleted, the kubelet reports its container
	// stopped, or nothing listens on its admin port. That is a fact, not a
	// suspicion, so the operator promotes at once instead of waiting
	// failover.timeout. A leader that merely does not answer (paused, cut
	// off, overloaded) is never Gone.
	Gone bool
	// Leaving (with Gone) means the leader's pod is being deleted: its
	// process may still run out its shutdown grace, so the promotion is a
	// planned switchover.
	Leaving bool
}

// AssessLeader looks at the member that leads the decided record.
func AssessLeader(members []Member, rec *rolisv1.EpochRecord) Assessment {
	if rec.GetEpoch() == 0 {
		return Assessment{State: NoLeader, Reason: "no epoch decided yet"}
	}
	var leader *Member
	for i := range members {
		if uint32(members[i].ID) == rec.GetLeaderId() {
			leader = &members[i]
		}
	}
	if leader == nil {
		return Assessment{State: Unhealthy, Reason: fmt.Sprintf("leader id %d of epoch %d is not a member", rec.GetLeaderId(), rec.GetEpoch())}
	}
	a := Assessment{Leader: leader, State: Unhealthy}
	st := leader.Status
	switch {
	case !leader.PodExists:
		a.Reason, a.Gone = fmt.Sprintf("leader %s has no pod", leader.Pod), true
	case leader.Deleting:
		a.Reason, a.Gone, a.Leaving = fmt.Sprintf("leader %s is being deleted", leader.Pod), true, true
	case leader.Stopped != "":
		a.Reason, a.Gone = fmt.Sprintf("leader %s: %s", leader.Pod, leader.Stopped), true
	case !leader.Reachable():
		a.Reason = fmt.Sprintf("leader %s unreachable: %s", leader.Pod, ShortError(leader.Err))
		a.Gone = Refused(leader.Err)
	case st.GetShuttingDown():
		// Draining after SIGTERM is as much a fact as a deletionTimestamp,
		// and may be seen first: the operator's cache of the pod can lag
		// the kubelet's signal.
		a.Reason, a.Gone, a.Leaving = fmt.Sprintf("leader %s is shutting down", leader.Pod), true, true
	case !st.GetHealthy():
		a.Reason = fmt.Sprintf("leader %s reports unhealthy", leader.Pod)
	case st.GetRole() == rolisv1.Role_LEADER && st.GetEpoch() == rec.GetEpoch():
		a.State, a.Reason = Serving, fmt.Sprintf("%s leads epoch %d", leader.Pod, rec.GetEpoch())
	case st.GetRole() == rolisv1.Role_CANDIDATE && st.GetPromisedEpoch() == rec.GetEpoch():
		a.State, a.Reason = Opening, fmt.Sprintf("%s was chosen for epoch %d and has not opened it", leader.Pod, rec.GetEpoch())
	default:
		a.Reason = fmt.Sprintf("leader %s is %s in epoch %d, decided epoch is %d", leader.Pod, leader.RoleName(), st.GetEpoch(), rec.GetEpoch())
	}
	return a
}

// NextEpoch is one above every epoch anyone has seen: the decided record,
// and every member's epoch, promise and known decision. A promise of a
// failed attempt counts, so a retry never reuses a ballot a member promised.
func NextEpoch(members []Member, rec *rolisv1.EpochRecord) uint64 {
	top := rec.GetEpoch()
	for i := range members {
		st := members[i].Status
		for _, e := range []uint64{st.GetEpoch(), st.GetPromisedEpoch(), st.GetDecided().GetEpoch()} {
			if e > top {
				top = e
			}
		}
	}
	return top + 1
}

// Lagging lists the reachable members that do not yet know the decided
// record or its leader; AnnounceLeader tells them.
func Lagging(members []Member, rec *rolisv1.EpochRecord) []*Member {
	var out []*Member
	for i := range members {
		m := &members[i]
		if !m.Reachable() {
			continue
		}
		st := m.Status
		if st.GetDecided().GetEpoch() < rec.GetEpoch() || st.GetLeaderId() != rec.GetLeaderId() || st.GetEpoch() < rec.GetEpoch() {
			out = append(out, m)
		}
	}
	return out
}
