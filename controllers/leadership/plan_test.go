/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"errors"
	"reflect"
	"testing"

	. "github.com/onsi/gomega"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// ids are the member ids 1..n (pod ordinals start at 1).
func ids(n int32) []int32 {
	out := []int32{}
	for i := int32(1); i <= n; i++ {
		out = append(out, i)
	}
	return out
}

func members(n int32) []Member {
	out := []Member{}
	for _, id := range ids(n) {
		out = append(out, member(id, 1, key(1, 1)))
	}
	return out
}

func TestPlanMembershipScalesUpOneMemberAtATime(t *testing.T) {
	g := NewWithT(t)
	// 3 → 5, first the pod, then the membership change, then the next pod.
	a := PlanMembership(5, 3, ids(3), 1, members(3))
	g.Expect(a.Kind).To(Equal(GrowStatefulSet))
	g.Expect(a.Replicas).To(Equal(int32(4)))
	g.Expect(a.ID).To(Equal(int32(4)))

	notYet := members(4)
	notYet[3].Status, notYet[3].Err = nil, errors.New("starting")
	a = PlanMembership(5, 4, ids(3), 1, notYet)
	g.Expect(a.Kind).To(Equal(Wait))
	g.Expect(a.Reason).To(ContainSubstring("waiting for member 4"))

	a = PlanMembership(5, 4, ids(3), 1, members(4))
	g.Expect(a.Kind).To(Equal(AddMember))
	g.Expect(a.Members).To(Equal([]int32{1, 2, 3, 4}))

	a = PlanMembership(5, 4, ids(4), 1, members(4))
	g.Expect(a.Kind).To(Equal(GrowStatefulSet))
	g.Expect(a.Replicas).To(Equal(int32(5)))

	a = PlanMembership(5, 5, ids(5), 1, members(5))
	g.Expect(a.Kind).To(Equal(Nothing))
}

func TestPlanMembershipScalesDownOneMemberAtATimeLeaderLast(t *testing.T) {
	g := NewWithT(t)
	a := PlanMembership(3, 5, ids(5), 1, members(5))
	g.Expect(a.Kind).To(Equal(RemoveMember))
	g.Expect(a.Members).To(Equal([]int32{1, 2, 3, 4}))

	a = PlanMembership(3, 5, ids(4), 4, members(5))
	g.Expect(a.Kind).To(Equal(Switchover), "the member to remove leads: switch over first")
	g.Expect(a.ID).To(Equal(int32(4)))

	a = PlanMembership(3, 5, ids(3), 1, members(5))
	g.Expect(a.Kind).To(Equal(ShrinkStatefulSet), "pods go only after the membership no longer has them")
	g.Expect(a.Replicas).To(Equal(int32(3)))
}

func TestPlanMembershipChangesAreSingleMemberSoMajoritiesIntersect(t *testing.T) {
	g := NewWithT(t)
	for _, from := range []int32{1, 3, 5, 7} {
		for _, to := range []int32{1, 3, 5, 7} {
			cur, reps := ids(from), from
			for step := 0; step < 40; step++ {
				a := PlanMembership(to, reps, cur, 1, members(7))
				switch a.Kind {
				case GrowStatefulSet, ShrinkStatefulSet:
					reps = a.Replicas
					continue
				case AddMember, RemoveMember:
					d := len(a.Members) - len(cur)
					g.Expect(d == 1 || d == -1).To(BeTrue(), "%d→%d changed %d members at once", from, to, d)
					// Every majority of the old and of the new configuration meet.
					g.Expect(Majority(len(cur)) + Majority(len(a.Members))).To(BeNumerically(">", max(len(cur), len(a.Members))))
					cur = a.Members
					continue
				}
				g.Expect(a.Kind).To(Equal(Nothing), a.Reason)
				break
			}
			g.Expect(cur).To(Equal(ids(to)))
			g.Expect(reps).To(Equal(to))
		}
	}
}

func TestPlanRolloutRestartsFollowersFirstHighestOrdinalFirst(t *testing.T) {
	g := NewWithT(t)
	m := members(3)
	for i := range m {
		m[i].Outdated = true
	}
	a := PlanRollout(m, 2, true) // member 2 leads
	g.Expect(a.Kind).To(Equal(DeletePod))
	g.Expect(a.ID).To(Equal(int32(3)))

	m[2].Outdated = false
	a = PlanRollout(m, 2, true)
	g.Expect(a).To(HaveField("Kind", DeletePod))
	g.Expect(a.ID).To(Equal(int32(1)))

	m[0].Outdated = false
	a = PlanRollout(m, 2, true)
	g.Expect(a.Kind).To(Equal(Switchover), "the leader goes last, after a switchover")
	g.Expect(a.ID).To(Equal(int32(2)))

	m[1].Outdated = false
	g.Expect(PlanRollout(m, 2, true).Kind).To(Equal(Nothing))
}

func TestPlanRolloutWaitsForASettledCluster(t *testing.T) {
	g := NewWithT(t)
	m := members(3)
	m[2].Outdated = true
	g.Expect(PlanRollout(m, 1, false).Reason).To(ContainSubstring("serving leader"))

	m[1].Ready = false
	a := PlanRollout(m, 1, true)
	g.Expect(a.Kind).To(Equal(Wait))
	g.Expect(a.Reason).To(ContainSubstring("db-2"))

	m[1].Ready, m[1].Deleting = true, true
	g.Expect(PlanRollout(m, 1, true).Reason).To(ContainSubstring("restarting"))

	m[1].Deleting, m[1].Status, m[1].Err = false, nil, errors.New("down")
	g.Expect(PlanRollout(m, 1, true).Kind).To(Equal(Wait))
}

// A member whose pod says Ready while it still catches up (a probe
// overridden, or a pod marked Ready as soon as it serves) holds the
// rollout: a second member restarted now would need its votes.
func TestPlanRolloutWaitsForAMemberThatCatchesUp(t *testing.T) {
	g := NewWithT(t)
	m := members(3)
	m[0].Outdated = true
	m[1].Status.Role = rolisv1.Role_CATCHING_UP
	a := PlanRollout(m, 3, true)
	g.Expect(a.Kind).To(Equal(Wait))
	g.Expect(a.Reason).To(Equal("rolling restart waits for db-2 to catch up"))
	m[1].Status.Role = rolisv1.Role_FOLLOWER
	g.Expect(PlanRollout(m, 3, true)).To(HaveField("Kind", DeletePod))
}

func TestPlanRolloutReplacesADownOutdatedFollowerFirst(t *testing.T) {
	g := NewWithT(t)
	m := members(3)
	// The rollout of a broken revision stopped at member 3: its pod does
	// not run, and the repaired spec made it the only outdated one.
	m[2].Outdated, m[2].Ready, m[2].Status, m[2].Err = true, false, nil, errors.New("down")
	a := PlanRollout(m, 1, true)
	g.Expect(a.Kind).To(Equal(DeletePod), a.Reason)
	g.Expect(a.ID).To(Equal(int32(3)))

	// An outdated follower that answers but is not ready (catching up) is
	// waited for.
	m[2].Status, m[2].Err = m[1].Status, nil
	g.Expect(PlanRollout(m, 1, true).Kind).To(Equal(Wait))

	// A down follower on the current revision is waited for: the rollout
	// stops at a broken pod.
	m[2].Outdated, m[2].Status, m[2].Err = false, nil, errors.New("down")
	m[1].Outdated = true
	a = PlanRollout(m, 1, true)
	g.Expect(a.Kind).To(Equal(Wait))
	g.Expect(a.Reason).To(ContainSubstring("db-3"))

	// A down leader is never restarted by the rollout, nor anything without
	// a serving leader.
	m[1].Outdated = false
	m[0].Outdated, m[0].Ready, m[0].Status, m[0].Err = true, false, nil, errors.New("down")
	g.Expect(PlanRollout(m, 1, true).Kind).To(Equal(Wait))
	m[0].Outdated, m[2].Outdated = false, true
	g.Expect(PlanRollout(m, 1, false).Kind).To(Equal(Wait))
}

func TestPlanRolloutOfASingleMemberRestartsIt(t *testing.T) {
	g := NewWithT(t)
	m := members(1)
	m[0].Outdated = true
	a := PlanRollout(m, 1, true)
	g.Expect(a.Kind).To(Equal(DeletePod))
	g.Expect(a.ID).To(Equal(int32(1)))
}

func TestMemberIDsSorts(t *testing.T) {
	g := NewWithT(t)
	g.Expect(MemberIDs([]*rolisv1.Member{{Id: 2}, {Id: 0}, {Id: 1}})).To(Equal([]int32{0, 1, 2}))
}

func TestPlanVotersFencesOneMemberAtATimeLeaderLast(t *testing.T) {
	fenced := map[int32]bool{2: true}
	a := PlanVoters(3, 3, ids(3), 1, members(3), fenced)
	if a.Kind != RemoveMember || a.ID != 2 || !reflect.DeepEqual(a.Members, []int32{1, 3}) {
		t.Fatalf("fencing a follower removes it alone: %+v", a)
	}
	a = PlanVoters(3, 3, []int32{1, 3}, 1, members(3), fenced)
	if a.Kind != Nothing {
		t.Fatalf("a fenced member's pod keeps running (no shrink below it): %+v", a)
	}
	a = PlanVoters(3, 3, ids(3), 2, members(3), fenced)
	if a.Kind != Switchover || a.ID != 2 {
		t.Fatalf("a fenced leader is switched over first: %+v", a)
	}
	a = PlanVoters(3, 3, []int32{1, 3}, 1, members(3), nil)
	if a.Kind != AddMember || a.ID != 2 || !reflect.DeepEqual(a.Members, []int32{1, 2, 3}) {
		t.Fatalf("unfencing adds the member back: %+v", a)
	}
	a = PlanVoters(5, 3, []int32{1, 3}, 1, members(5), map[int32]bool{2: true})
	if a.Kind != GrowStatefulSet || a.ID != 4 {
		t.Fatalf("scaling up with a fenced member starts member 4: %+v", a)
	}
	if a := PlanVoters(3, 3, []int32{1, 2}, 1, members(3), map[int32]bool{3: true}); a.Kind != Nothing {
		t.Fatalf("the pod of fenced member 3 is not stopped: %+v", a)
	}
}

func TestFenceAllowedKeepsAMajorityVoting(t *testing.T) {
	for _, tc := range []struct {
		desired int32
		fenced  []int32
		ok      bool
	}{
		{3, []int32{2}, true}, {3, []int32{1, 2}, false}, {5, []int32{4, 5}, true},
		{5, []int32{1, 2, 3}, false}, {1, []int32{1}, false}, {3, []int32{9}, true},
	} {
		if got := FenceAllowed(tc.desired, tc.fenced) == ""; got != tc.ok {
			t.Errorf("FenceAllowed(%d, %v) allowed=%v, want %v", tc.desired, tc.fenced, got, tc.ok)
		}
	}
}
