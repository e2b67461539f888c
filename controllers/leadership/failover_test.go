/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"context"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

type cluster3 struct {
	dialer  *fakeDialer
	store   *memStore
	driver  *Driver
	targets []Target
	events  []string
}

func newCluster3() *cluster3 {
	c := &cluster3{
		dialer: &fakeDialer{members: map[int32]*fakeAdmin{
			1: newFakeAdmin(1, 1, key(1, 10)),
			2: newFakeAdmin(2, 1, key(1, 30)),
			3: newFakeAdmin(3, 1, key(1, 20)),
		}, down: map[int32]bool{}},
		store: &memStore{rec: &rolisv1.EpochRecord{Epoch: 1, LeaderId: 1}},
	}
	for i := int32(1); i <= 3; i++ {
		c.targets = append(c.targets, Target{ID: i, Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName(i)}}})
	}
	c.driver = &Driver{
		Dialer: c.dialer, Store: c.store, Timeouts: DefaultTimeouts(),
		Observer: ObserverFunc(func(s Step, f string, a ...any) {
			c.events = append(c.events, string(s)+": "+fmt.Sprintf(f, a...))
		}),
		ClientAddress: func(id int32) string { return fmt.Sprintf("%s:7000", podName(id)) },
	}
	return c
}

func (c *cluster3) probe(t *testing.T) []Member {
	base := make([]Member, len(c.targets))
	for i, t := range c.targets {
		base[i] = Member{Pod: podName(t.ID), PodExists: true, Ready: true}
	}
	return Probe(context.Background(), c.dialer, c.targets, base, DefaultTimeouts())
}

func (c *cluster3) target(id int32) Target { return c.targets[id-1] }

func (c *cluster3) promotion(t *testing.T, members []Member) Promotion {
	from, err := c.store.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cand, err := ChooseCandidate(members, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Promotion{Candidate: c.target(cand.ID), Members: members, Targets: c.targets, From: from, Epoch: NextEpoch(members, from.Record)}
}

func TestPromoteAfterLeaderDeathDecidesBeforeOpeningAndAnnouncesToTheMembersThatAnswer(t *testing.T) {
	g := NewWithT(t)
	c := newCluster3()
	c.dialer.down[1] = true // the leader of epoch 1 died
	members := c.probe(t)
	g.Expect(members[0].Reachable()).To(BeFalse())

	p := c.promotion(t, members)
	g.Expect(p.Candidate.ID).To(Equal(int32(2)), "member 2 has the highest watermark")
	g.Expect(p.Epoch).To(Equal(uint64(2)))

	var openedBeforeDecision bool
	c.store.beforeCAS = func() {
		openedBeforeDecision = c.dialer.members[2].status.Role == rolisv1.Role_LEADER
	}
	stored, err := c.driver.Promote(context.Background(), p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(openedBeforeDecision).To(BeFalse(), "the record must be decided before the candidate opens")
	g.Expect(stored.Record.GetEpoch()).To(Equal(uint64(2)))
	g.Expect(stored.Record.GetLeaderId()).To(Equal(uint32(2)))
	g.Expect(c.store.rec.GetEpoch()).To(Equal(uint64(2)))

	g.Expect(c.dialer.members[2].Calls()).To(ContainElements("Prepare(2)", "Open(2)", "Announce(2,2)"))
	g.Expect(c.dialer.members[3].Calls()).To(ContainElement("Announce(2,2)"))
	g.Expect(c.events).To(ContainElement(ContainSubstring("Prepare: PrepareFailover(epoch 2)")))
	g.Expect(c.events).To(ContainElement(ContainSubstring("Decide: decided epoch 2")))
	g.Expect(c.events).To(ContainElement(ContainSubstring("Open: db-2 opened epoch 2")))
	// Only members that answered the probe are told (the dead leader is
	// told once it answers again).
	g.Expect(c.events).To(ContainElement(ContainSubstring("Announce: announced epoch 2 with leader 2 to 2 members")))

	after := c.probe(t)
	g.Expect(AssessLeader(after, stored.Record).State).To(Equal(Serving))
}

func TestPromoteWhenPrepareIsUnimplementedStopsBeforeDeciding(t *testing.T) {
	g := NewWithT(t)
	c := newCluster3()
	c.store.rec = &rolisv1.EpochRecord{}
	for _, m := range c.dialer.members {
		m.prepare = func(*rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error) {
			return nil, status.Error(codes.Unimplemented, "replication is not built into this rolisd")
		}
	}
	_, err := c.driver.Promote(context.Background(), c.promotion(t, c.probe(t)))
	g.Expect(err).To(HaveOccurred())
	g.Expect(Unimplemented(err)).To(BeTrue())
	g.Expect(FailedStep(err)).To(Equal(StepPrepare))
	g.Expect(err.Error()).To(ContainSubstring("Unimplemented: replication is not built"))
	g.Expect(c.store.rec.GetEpoch()).To(BeZero(), "nothing may be decided")
	for _, m := range c.dialer.members {
		g.Expect(m.Calls()).NotTo(ContainElement(HavePrefix("Open")))
	}
}

func TestPromoteGivesUpWhenANewerDecisionWonTheCompareAndSet(t *testing.T) {
	g := NewWithT(t)
	c := newCluster3()
	p := c.promotion(t, c.probe(t))
	c.store.beforeCAS = func() { // another operator decides epoch 2 first
		c.store.mu.Lock()
		c.store.rec, c.store.version = &rolisv1.EpochRecord{Epoch: 2, LeaderId: 3}, c.store.version+1
		c.store.mu.Unlock()
	}
	_, err := c.driver.Promote(context.Background(), p)
	g.Expect(errors.Is(err, ErrSuperseded)).To(BeTrue())
	g.Expect(FailedStep(err)).To(Equal(StepDecide))
	g.Expect(c.store.rec.GetLeaderId()).To(Equal(uint32(3)), "the winner's record stays")
	g.Expect(c.dialer.members[p.Candidate.ID].Calls()).NotTo(ContainElement(HavePrefix("Open")),
		"a candidate whose record lost must never open")
}

func TestPromoteRejectsAProposalForAnotherEpoch(t *testing.T) {
	g := NewWithT(t)
	c := newCluster3()
	p := c.promotion(t, c.probe(t))
	c.dialer.members[p.Candidate.ID].prepare = func(r *rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error) {
		return &rolisv1.PrepareFailoverResponse{Proposed: &rolisv1.EpochRecord{Epoch: r.NewEpoch + 1}}, nil
	}
	_, err := c.driver.Promote(context.Background(), p)
	g.Expect(err).To(MatchError(ContainSubstring("proposed epoch 3, asked for 2")))
	g.Expect(c.store.rec.GetEpoch()).To(Equal(uint64(1)))

	c.dialer.members[p.Candidate.ID].prepare = func(r *rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error) {
		return &rolisv1.PrepareFailoverResponse{}, nil
	}
	_, err = c.driver.Promote(context.Background(), p)
	g.Expect(err).To(MatchError(ContainSubstring("proposed no record")))

	c.dialer.members[p.Candidate.ID].prepare = func(r *rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error) {
		return &rolisv1.PrepareFailoverResponse{Proposed: &rolisv1.EpochRecord{Epoch: r.NewEpoch, LeaderId: 3}}, nil
	}
	_, err = c.driver.Promote(context.Background(), p)
	g.Expect(err).To(MatchError(ContainSubstring("expected itself")))
}

func TestPromoteWhenOpenFailsKeepsTheDecisionAndResumeFinishesIt(t *testing.T) {
	g := NewWithT(t)
	c := newCluster3()
	p := c.promotion(t, c.probe(t))
	cand := c.dialer.members[p.Candidate.ID]
	good := cand.open
	cand.open = func(*rolisv1.OpenEpochRequest) (*rolisv1.OpenEpochResponse, error) {
		return nil, status.Error(codes.DeadlineExceeded, "barrier not on a majority")
	}
	stored, err := c.driver.Promote(context.Background(), p)
	g.Expect(FailedStep(err)).To(Equal(StepOpen))
	g.Expect(stored.Record.GetEpoch()).To(Equal(uint64(2)), "the decision stands: only this candidate may open epoch 2")

	members := c.probe(t)
	g.Expect(AssessLeader(members, c.store.rec).State).To(Equal(Opening))

	cand.open = good
	g.Expect(c.driver.Resume(context.Background(), c.target(p.Candidate.ID), c.targets, members, c.store.rec, nil)).To(Succeed())
	g.Expect(AssessLeader(c.probe(t), c.store.rec).State).To(Equal(Serving))
}

func TestAnnounceReportsMembersThatCouldNotBeTold(t *testing.T) {
	g := NewWithT(t)
	c := newCluster3()
	c.dialer.members[3].annErr = status.Error(codes.Unavailable, "gone")
	c.dialer.down[1] = true
	errs := c.driver.Announce(context.Background(), c.targets, c.probe(t), &rolisv1.EpochRecord{Epoch: 2, LeaderId: 2})
	g.Expect(errs).To(HaveLen(2))
	g.Expect(FailedStep(errs[0])).To(Equal(StepAnnounce))
}

func TestPromoteWhenCandidateIsUnreachable(t *testing.T) {
	g := NewWithT(t)
	c := newCluster3()
	p := c.promotion(t, c.probe(t))
	c.dialer.down[p.Candidate.ID] = true
	_, err := c.driver.Promote(context.Background(), p)
	g.Expect(FailedStep(err)).To(Equal(StepPrepare))
	g.Expect(c.store.rec.GetEpoch()).To(Equal(uint64(1)))
}

// The label moves in Opened: it must run once the candidate is open and
// before any announcement, so the client Service does not wait for them.
func TestPromoteCallsOpenedAfterOpeningBeforeAnnouncing(t *testing.T) {
	g := NewWithT(t)
	c := newCluster3()
	c.dialer.down[1] = true
	p := c.promotion(t, c.probe(t))
	var candidateCalls, followerCalls []string
	p.Opened = func() {
		candidateCalls = c.dialer.members[p.Candidate.ID].Calls()
		followerCalls = c.dialer.members[3].Calls()
	}
	_, err := c.driver.Promote(context.Background(), p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(candidateCalls).To(ContainElement("Open(2)"))
	g.Expect(candidateCalls).NotTo(ContainElement(ContainSubstring("Announce")))
	g.Expect(followerCalls).NotTo(ContainElement(ContainSubstring("Announce")))
	g.Expect(c.dialer.members[3].Calls()).To(ContainElement("Announce(2,2)"))
}
