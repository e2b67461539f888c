/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

func key(e, ts uint64) *rolisv1.LogKey { return &rolisv1.LogKey{Epoch: e, Ts: ts} }

func member(id int32, epoch uint64, g *rolisv1.LogKey) Member {
	return Member{ID: id, Pod: podName(id), PodExists: true, Ready: true, Status: &rolisv1.StatusResponse{
		Id: uint32(id), Role: rolisv1.Role_FOLLOWER, Epoch: epoch, Watermark: g, Healthy: true,
	}}
}

func podName(id int32) string { return "db-" + string(rune('0'+id)) }

func TestCompareKeysOrdersEpochFirst(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CompareKeys(key(2, 1), key(1, 999))).To(Equal(1))
	g.Expect(CompareKeys(key(1, 5), key(1, 7))).To(Equal(-1))
	g.Expect(CompareKeys(key(3, 3), key(3, 3))).To(Equal(0))
	g.Expect(CompareKeys(nil, key(0, 0))).To(Equal(0), "a missing key is (0,0)")
}

func TestChooseCandidatePicksHighestEpochThenHighestWatermark(t *testing.T) {
	g := NewWithT(t)
	members := []Member{
		member(0, 2, key(2, 50)),
		member(1, 3, key(3, 10)), // highest epoch wins over a higher ts in an older epoch
		member(2, 3, key(2, 900)),
	}
	c, err := ChooseCandidate(members, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.ID).To(Equal(int32(1)))

	members[2] = member(2, 3, key(3, 11)) // same epoch, higher watermark
	c, err = ChooseCandidate(members, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.ID).To(Equal(int32(2)))
}

func TestChooseCandidateSkipsIneligibleMembers(t *testing.T) {
	g := NewWithT(t)
	unreachable := member(0, 9, key(9, 9))
	unreachable.Status, unreachable.Err = nil, errors.New("connection refused")
	unhealthy := member(1, 9, key(9, 9))
	unhealthy.Status.Healthy = false
	catching := member(2, 9, key(9, 9))
	catching.Status.Role = rolisv1.Role_CATCHING_UP
	deleting := member(3, 9, key(9, 9))
	deleting.Deleting = true
	noPod := member(4, 9, key(9, 9))
	noPod.PodExists = false
	ok := member(5, 1, key(1, 1))

	c, err := ChooseCandidate([]Member{unreachable, unhealthy, catching, deleting, noPod, ok}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.ID).To(Equal(int32(5)))

	_, err = ChooseCandidate([]Member{unreachable, unhealthy}, nil)
	g.Expect(err).To(MatchError(ContainSubstring("no eligible candidate")))
	g.Expect(err.Error()).To(ContainSubstring("connection refused"))
	g.Expect(err.Error()).To(ContainSubstring("reports unhealthy"))
}

func TestChooseCandidateTieBreaksOnRevisionThenLowestID(t *testing.T) {
	g := NewWithT(t)
	a, b, c := member(0, 1, key(1, 5)), member(1, 1, key(1, 5)), member(2, 1, key(1, 5))
	a.Outdated = true
	got, err := ChooseCandidate([]Member{a, b, c}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal(int32(1)), "an updated member wins a tie over an outdated one")

	got, err = ChooseCandidate([]Member{a, b, c}, map[int32]bool{1: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal(int32(2)), "excluded members are never chosen")
}

func TestAssessLeader(t *testing.T) {
	rec := &rolisv1.EpochRecord{Epoch: 4, LeaderId: 1}
	leader := member(1, 4, key(4, 1))
	leader.Status.Role = rolisv1.Role_LEADER
	cases := []struct {
		name   string
		mutate func(m *Member)
		rec    *rolisv1.EpochRecord
		want   LeaderState
		reason string
		// gone: a fact, fail over at once; leaving: a planned switchover.
		gone, leaving bool
	}{
		{"no decided epoch means no leader", func(*Member) {}, &rolisv1.EpochRecord{}, NoLeader, "no epoch decided", false, false},
		{"leader open in the decided epoch serves", func(*Member) {}, rec, Serving, "leads epoch 4", false, false},
		{"leader that does not answer is unhealthy, not gone (it may be paused)", func(m *Member) {
			m.Status, m.Err = nil, status.Error(codes.DeadlineExceeded, "context deadline exceeded")
		}, rec, Unhealthy, "unreachable", false, false},
		{"leader whose admin port refuses connections is gone", func(m *Member) {
			m.Status, m.Err = nil, status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:7001: connect: connection refused"`)
		}, rec, Unhealthy, "connection refused", true, false},
		{"leader reporting unhealthy is unhealthy", func(m *Member) { m.Status.Healthy = false }, rec, Unhealthy, "reports unhealthy", false, false},
		{"leader of an older epoch is unhealthy", func(m *Member) { m.Status.Epoch = 3 }, rec, Unhealthy, "decided epoch is 4", false, false},
		{"candidate that promised the decided epoch is opening", func(m *Member) {
			m.Status.Role, m.Status.PromisedEpoch, m.Status.Epoch = rolisv1.Role_CANDIDATE, 4, 3
		}, rec, Opening, "has not opened", false, false},
		{"leader whose pod is being deleted is leaving (switch over now)", func(m *Member) { m.Deleting = true }, rec, Unhealthy, "being deleted", true, true},
		{"leader draining after SIGTERM is leaving, even before its pod's deletion is seen", func(m *Member) {
			m.Status.Healthy, m.Status.ShuttingDown = false, true
		}, rec, Unhealthy, "shutting down", true, true},
		{"leader without a pod is gone", func(m *Member) { m.PodExists = false }, rec, Unhealthy, "has no pod", true, false},
		{"leader whose container the kubelet reports stopped is gone, even if something answers", func(m *Member) {
			m.Stopped = "container rolisd terminated (Error, exit code 137)"
		}, rec, Unhealthy, "exit code 137", true, false},
		{"leader id outside the membership is unhealthy", func(*Member) {}, &rolisv1.EpochRecord{Epoch: 4, LeaderId: 7}, Unhealthy, "not a member", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			l := leader
			l.Status = &rolisv1.StatusResponse{}
			*l.Status = rolisv1.StatusResponse{Id: 1, Role: rolisv1.Role_LEADER, Epoch: 4, Watermark: key(4, 1), Healthy: true}
			tc.mutate(&l)
			a := AssessLeader([]Member{member(0, 4, key(4, 1)), l}, tc.rec)
			g.Expect(a.State).To(Equal(tc.want), a.Reason)
			g.Expect(a.Reason).To(ContainSubstring(tc.reason))
			g.Expect(a.Gone).To(Equal(tc.gone), "gone")
			g.Expect(a.Leaving).To(Equal(tc.leaving), "leaving")
		})
	}
}

func TestRefusedIsOnlyANothingListensError(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Refused(nil)).To(BeFalse())
	g.Expect(Refused(&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})).To(BeTrue())
	g.Expect(Refused(status.Error(codes.Unavailable, "dial tcp 10.0.0.7:7001: connect: connection refused"))).To(BeTrue())
	g.Expect(Refused(status.Error(codes.Unavailable, "dial tcp 10.0.0.7:7001: connect: no route to host"))).To(BeFalse())
	g.Expect(Refused(status.Error(codes.DeadlineExceeded, "context deadline exceeded"))).To(BeFalse())
}

func TestNextEpochIsAboveEveryEpochAndPromiseSeen(t *testing.T) {
	g := NewWithT(t)
	m := []Member{member(0, 3, nil), member(1, 2, nil), {ID: 2, Err: errors.New("down")}}
	m[1].Status.PromisedEpoch = 7 // a failed earlier attempt
	g.Expect(NextEpoch(m, &rolisv1.EpochRecord{Epoch: 5})).To(Equal(uint64(8)))
	m[0].Status.Decided = &rolisv1.EpochRecord{Epoch: 11}
	g.Expect(NextEpoch(m, &rolisv1.EpochRecord{Epoch: 5})).To(Equal(uint64(12)))
	g.Expect(NextEpoch(nil, &rolisv1.EpochRecord{})).To(Equal(uint64(1)))
}

func TestLaggingListsMembersThatMissedTheDecision(t *testing.T) {
	g := NewWithT(t)
	rec := &rolisv1.EpochRecord{Epoch: 2, LeaderId: 0}
	upToDate := member(0, 2, nil)
	upToDate.Status.Decided, upToDate.Status.LeaderId = rec, 0
	behind := member(1, 1, nil)
	down := Member{ID: 2, Err: errors.New("down")}
	got := Lagging([]Member{upToDate, behind, down}, rec)
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0].ID).To(Equal(int32(1)))
}

func TestMajority(t *testing.T) {
	g := NewWithT(t)
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 7: 4} {
		g.Expect(Majority(n)).To(Equal(want), "n=%d", n)
	}
}

func TestStillOpeningIsOnlyAnOpenThatDidNotAnswerInTime(t *testing.T) {
	g := NewWithT(t)
	open := func(err error) error { return &StepError{Step: StepOpen, Member: "db-2", Err: err} }
	g.Expect(StillOpening(open(status.Error(codes.Unavailable, "the re-proposals of epoch 3 are not on a majority yet")))).To(BeTrue())
	g.Expect(StillOpening(open(status.Error(codes.DeadlineExceeded, "context deadline exceeded")))).To(BeTrue())
	g.Expect(StillOpening(open(status.Error(codes.Unavailable, "connect: connection refused")))).To(BeFalse(), "the candidate died")
	g.Expect(StillOpening(open(status.Error(codes.FailedPrecondition, "OpenEpoch must follow")))).To(BeFalse())
	g.Expect(StillOpening(&StepError{Step: StepPrepare, Err: status.Error(codes.Unavailable, "no majority")})).To(BeFalse())
}

// Members that restarted with their data directories answer at epoch 0 and
// watermark (0,0) with the decided record and the slots they recovered: the
// choice goes by those, so the member with the longest recovered log leads
// (a live member of the decided epoch still comes first).
func TestChooseCandidateUsesTheRecoveredStateAfterARestart(t *testing.T) {
	g := NewWithT(t)
	recovered := func(id int32, slots ...uint64) Member {
		m := member(id, 0, key(0, 0))
		m.Status.PromisedEpoch = 1
		m.Status.Decided = &rolisv1.EpochRecord{Epoch: 1, LeaderId: 1}
		for i, n := range slots {
			m.Status.Streams = append(m.Status.Streams, &rolisv1.StreamStatus{Stream: uint32(i), NextSlot: n})
		}
		return m
	}
	members := []Member{recovered(1, 2499, 2523), recovered(2, 2597, 2624), recovered(3, 2593, 2619)}
	c, err := ChooseCandidate(members, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.ID).To(Equal(int32(2)), "the longest recovered log")

	members = append(members, member(4, 0, key(0, 0)))
	c, err = ChooseCandidate(members, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.ID).To(Equal(int32(2)), "an empty member knows no decided epoch")

	members[0] = member(1, 1, key(1, 40)) // a live member of epoch 1
	c, err = ChooseCandidate(members, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.ID).To(Equal(int32(1)), "a live watermark of the decided epoch comes before any log length")
}
