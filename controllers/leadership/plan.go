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

// ActionKind is what a plan asks the controller to do next.
type ActionKind string

// Actions of the membership and rollout plans.
const (
	// Nothing: the cluster is where the spec wants it.
	Nothing ActionKind = "Nothing"
	// Wait: something must happen first; Reason says what.
	Wait ActionKind = "Wait"
	// GrowStatefulSet: run one more pod (its ordinal is ID), starting with
	// the membership that includes it.
	GrowStatefulSet ActionKind = "GrowStatefulSet"
	// AddMember: ChangeMembership on the leader to Members (one more).
	AddMember ActionKind = "AddMember"
	// RemoveMember: ChangeMembership on the leader to Members (one fewer).
	RemoveMember ActionKind = "RemoveMember"
	// ShrinkStatefulSet: stop the pods of members no longer in the membership.
	ShrinkStatefulSet ActionKind = "ShrinkStatefulSet"
	// Switchover: move leadership away from ID (a planned failover).
	Switchover ActionKind = "Switchover"
	// DeletePod: delete member ID's pod so it restarts with the new revision.
	DeletePod ActionKind = "DeletePod"
)

// Action is the next step of a plan.
type Action struct {
	Kind     ActionKind
	ID       int32
	Replicas int32
	Members  []int32
	Reason   string
}

// MemberIDs returns the ids of a membership as rolisd reports it.
func MemberIDs(ms []*rolisv1.Member) []int32 {
	ids := make([]int32, 0, len(ms))
	for _, m := range ms {
		ids = append(ids, int32(m.GetId()))
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// PlanMembership moves the membership one member at a time towards desired.
//
// The rule that keeps majorities intersecting: every configuration change
// adds or removes exactly one member, and the next change starts only after
// the leader reports the previous one in force. Any majority of n members
// and any majority of n±1 members share at least one member, so a decision
// taken by the old configuration is always seen by the new one. Going from
// 3 to 5 therefore passes through 4 (an even size is fine as a transition:
// its majority is 3).
//
// current is the membership the leader reports, sorted (ids 1..k under
// this operator: a member's id is its pod's ordinal and ordinals start at
// 1); replicas is the StatefulSet's replica count, so pods 1..replicas
// exist. New members take the next id; members leave from the highest id,
// like the StatefulSet's own scaling, and a leader that must leave is first
// switched over.
func PlanMembership(desired, replicas int32, current []int32, leaderID int32, members []Member) Action {
	return PlanVoters(desired, replicas, current, leaderID, members, nil)
}

// PlanVoters is PlanMembership with fenced members: the voting
// configuration it moves towards is ids 1..desired without the fenced
// ones, still one member at a time. Members to add come first (the
// configuration never shrinks while a member could join it), then members
// to remove, fenced ones before those above desired, highest id first; a
// leader that must leave is switched over first. The pods of fenced
// members keep running: the StatefulSet shrinks only to the highest id
// that is a voter or a fenced member within desired. Whether a fence
// leaves enough voters is the caller's check (FenceAllowed).
func PlanVoters(desired, replicas int32, current []int32, leaderID int32, members []Member, fenced map[int32]bool) Action {
	n := int32(len(current))
	in := map[int32]bool{}
	for _, id := range current {
		in[id] = true
	}
	var want []int32
	for id := int32(1); id <= desired; id++ {
		if !fenced[id] {
			want = append(want, id)
		}
	}
	target := int32(len(want))
	for _, next := range want {
		if in[next] {
			continue
		}
		if replicas < next {
			return Action{Kind: GrowStatefulSet, ID: next, Replicas: next,
				Reason: fmt.Sprintf("scaling up %d→%d: start member %d", n, target, next)}
		}
		m := find(members, next)
		verb := fmt.Sprintf("scaling up %d→%d", n, target)
		if n >= target {
			verb = fmt.Sprintf("unfencing member %d", next)
		}
		if m == nil || !m.Reachable() {
			return Action{Kind: Wait, ID: next, Reason: fmt.Sprintf("%s: waiting for member %d to answer", verb, next)}
		}
		add := append(append([]int32{}, current...), next)
		sort.Slice(add, func(i, j int) bool { return add[i] < add[j] })
		return Action{Kind: AddMember, ID: next, Members: add,
			Reason: fmt.Sprintf("%s: add member %d", verb, next)}
	}
	var leave []int32 // fenced first, then above desired; highest id first in each
	for i := len(current) - 1; i >= 0; i-- {
		if id := current[i]; id <= desired && fenced[id] {
			leave = append(leave, id)
		}
	}
	for i := len(current) - 1; i >= 0; i-- {
		if id := current[i]; id > desired {
			leave = append(leave, id)
		}
	}
	if len(leave) > 0 {
		last := leave[0]
		verb := fmt.Sprintf("scaling down %d→%d", n, target)
		if last <= desired {
			verb = fmt.Sprintf("fencing member %d", last)
		}
		if last == leaderID {
			return Action{Kind: Switchover, ID: last, Reason: fmt.Sprintf("%s: member %d leads, switch over first", verb, last)}
		}
		keep := make([]int32, 0, len(current))
		for _, id := range current {
			if id != last {
				keep = append(keep, id)
			}
		}
		return Action{Kind: RemoveMember, ID: last, Members: keep,
			Reason: fmt.Sprintf("%s: remove member %d", verb, last)}
	}
	top := int32(0)
	if n > 0 {
		top = current[n-1]
	}
	for id := range fenced {
		if id <= desired && id > top {
			top = id
		}
	}
	if n > 0 && replicas > top {
		return Action{Kind: ShrinkStatefulSet, Replicas: top, Reason: fmt.Sprintf("scaling down: stop the pods above member %d", top)}
	}
	return Action{Kind: Nothing}
}

// FenceAllowed says whether fencing the given members of a cluster of
// desired members leaves a majority of the cluster voting; "" when it
// does, else why not. Below that the cluster would run on a configuration
// smaller than the majority its size promises: with 3 members fenced down
// to 1, one pod restart loses every acknowledged write's only copy.
func FenceAllowed(desired int32, fenced []int32) string {
	out := map[int32]bool{}
	for _, id := range fenced {
		if id >= 1 && id <= desired {
			out[id] = true
		}
	}
	voters := int(desired) - len(out)
	if need := Majority(int(desired)); voters < need {
		return fmt.Sprintf("fencing %v would leave %d of %d members voting, fewer than a majority (%d)", fenced, voters, desired, need)
	}
	return ""
}

// nextID is the smallest id (from 1) not in the membership.
func nextID(current []int32) int32 {
	seen := map[int32]bool{}
	for _, id := range current {
		seen[id] = true
	}
	for i := int32(1); ; i++ {
		if !seen[i] {
			return i
		}
	}
}

func find(members []Member, id int32) *Member {
	for i := range members {
		if members[i].ID == id {
			return &members[i]
		}
	}
	return nil
}

// PlanRollout restarts outdated members one at a time: followers first
// (highest ordinal first), the leader last after a switchover to an updated
// member, so the cluster loses at most one member at a time and the leader
// changes once. It only acts on a settled cluster: the leader serving and
// every member ready, reachable and not already restarting. One exception:
// an outdated follower that is down (not ready, not answering) is replaced
// first. It serves nothing, so its restart costs nothing, and it is the pod
// a rollout of a broken revision (an image that does not exist, a flag
// rolisd refuses) stopped at: the revision of the repaired spec must reach
// it, or the rollout would wait for it forever.
func PlanRollout(members []Member, leaderID int32, leaderServing bool) Action {
	var outdated []*Member
	for i := range members {
		m := &members[i]
		if !m.PodExists || m.Deleting {
			return Action{Kind: Wait, ID: m.ID, Reason: fmt.Sprintf("%s is restarting", m.Pod)}
		}
		if m.Outdated {
			outdated = append(outdated, m)
		}
	}
	if len(outdated) == 0 {
		return Action{Kind: Nothing}
	}
	if !leaderServing {
		return Action{Kind: Wait, Reason: "rolling restart waits for a serving leader"}
	}
	sort.Slice(outdated, func(i, j int) bool { return outdated[i].ID > outdated[j].ID })
	for _, m := range outdated {
		if m.ID != leaderID && !m.Ready && !m.Reachable() {
			return Action{Kind: DeletePod, ID: m.ID, Reason: fmt.Sprintf("replace follower %s, down on an older revision, with the new revision", m.Pod)}
		}
	}
	for i := range members {
		m := &members[i]
		if !m.Ready || !m.Reachable() {
			return Action{Kind: Wait, ID: m.ID, Reason: fmt.Sprintf("rolling restart waits for %s to be ready", m.Pod)}
		}
		// Not only the pod's word: readiness probes can be overridden, and
		// a member still in its state transfer cannot vouch for the votes
		// another restarted member forgot (docs/replication.md, "Members
		// that lose their memory"): restarting a second one then leaves
		// both waiting for each other.
		if m.Status.GetRole() == rolisv1.Role_CATCHING_UP {
			return Action{Kind: Wait, ID: m.ID, Reason: fmt.Sprintf("rolling restart waits for %s to catch up", m.Pod)}
		}
	}
	for _, m := range outdated {
		if m.ID != leaderID {
			return Action{Kind: DeletePod, ID: m.ID, Reason: fmt.Sprintf("restart follower %s with the new revision", m.Pod)}
		}
	}
	// Only the leader is left.
	if len(members) == 1 {
		return Action{Kind: DeletePod, ID: leaderID, Reason: "restart the only member (a single-member cluster has no one to switch over to)"}
	}
	return Action{Kind: Switchover, ID: leaderID, Reason: "switch over before restarting the leader"}
}
