/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// The record of the Kind run: epoch 1 decided at (0,0), then 100
// keys written (the leader's G seen at (1,900)), then every pod deleted;
// memory durability brings all three back at epoch 0, watermark (0,0).
func TestAMajorityThatCameBackEmptyUnderADecidedRecordIsDataLoss(t *testing.T) {
	g := NewWithT(t)
	rec := &rolisv1.EpochRecord{Epoch: 1, LeaderId: 1, Watermark: key(0, 0)}
	seen := SeenWatermark(rec, key(1, 900))
	g.Expect(seen).To(Equal(key(1, 900)), "the leader's G seen serving is later than the record's G'")

	empty := []Member{member(1, 0, key(0, 0)), member(2, 0, key(0, 0)), member(3, 0, key(0, 0))}
	d := AssessDataLoss(empty, rec, seen)
	g.Expect(d.Lost).To(BeTrue())
	g.Expect(d.Reason).To(Equal(DataLossMajorityBehind))
	g.Expect(d.Behind).To(HaveLen(3))
	g.Expect(d.Message).To(ContainSubstring("3 of 3 members answer with a state older than the decided record (epoch 1, leader 1, watermark (0,0), last seen watermark (1,900))"))
	g.Expect(d.Message).To(ContainSubstring("db-2 (epoch 0, promised 0, decided 0, watermark (0,0))"))

	// With the record's G' alone at (0,0) (an operator that never saw the
	// leader serve past it), nothing acknowledged is known to be lost.
	g.Expect(AssessDataLoss(empty, rec, SeenWatermark(rec, nil)).Lost).To(BeFalse())
	rec.Watermark = key(1, 5)
	g.Expect(AssessDataLoss(empty, rec, SeenWatermark(rec, nil)).Lost).To(BeTrue(), "the record's own G' counts")
}

func TestAMinorityBehindTheRecordIsNotDataLoss(t *testing.T) {
	g := NewWithT(t)
	rec := &rolisv1.EpochRecord{Epoch: 3, LeaderId: 1, Watermark: key(2, 40)}
	seen := SeenWatermark(rec, key(3, 70))
	members := []Member{member(1, 3, key(3, 70)), member(2, 3, key(3, 60)), member(3, 0, key(0, 0))}
	d := AssessDataLoss(members, rec, seen)
	g.Expect(d.Lost).To(BeFalse(), "the two others hold the record: a Prepare majority always meets one of them")
	g.Expect(d.Behind).To(HaveLen(1))
	g.Expect(d.Key()).To(BeEmpty())
}

// Members that restarted with their data (durability disk) keep their
// promise and the decided record they learned, so they are not behind even
// while their epoch or watermark reads low; and a follower that missed the
// decision but promised its epoch took part in it.
func TestMembersThatKeptTheirVotesAreNotBehind(t *testing.T) {
	g := NewWithT(t)
	rec := &rolisv1.EpochRecord{Epoch: 4, LeaderId: 2, Watermark: key(3, 500)}
	seen := SeenWatermark(rec, key(4, 800))
	promised := member(1, 3, key(3, 400))
	promised.Status.PromisedEpoch = 4
	decided := member(2, 0, key(0, 0))
	decided.Status.Decided = &rolisv1.EpochRecord{Epoch: 4}
	ahead := member(3, 3, key(4, 900)) // its G is past the last one seen
	for _, m := range []*Member{&promised, &decided, &ahead} {
		g.Expect(BehindRecord(m, rec, seen)).To(BeFalse(), m.Pod)
	}
	g.Expect(AssessDataLoss([]Member{promised, decided, ahead}, rec, seen).Lost).To(BeFalse())

	unreachable := Member{ID: 4, Pod: "db-4", Err: errors.New("down")}
	g.Expect(BehindRecord(&unreachable, rec, seen)).To(BeFalse(), "no answer says nothing about its state")
	g.Expect(BehindRecord(&decided, &rolisv1.EpochRecord{}, key(0, 0))).To(BeFalse(), "nothing was decided yet: a new cluster")
}

func TestAMemberThatReportsDataLossIsDataLossWhateverTheRecordSays(t *testing.T) {
	g := NewWithT(t)
	m := member(2, 0, key(0, 0))
	m.Status.DataLossSuspected = true
	m.Status.DataLossReason = "2 of 3 members came back without state"
	d := AssessDataLoss([]Member{member(1, 5, key(5, 5)), m, member(3, 5, key(5, 5))}, &rolisv1.EpochRecord{}, key(0, 0))
	g.Expect(d.Lost).To(BeTrue())
	g.Expect(d.Reason).To(Equal(DataLossReported))
	g.Expect(d.Message).To(Equal("1 of 3 members report suspected data loss (db-2: 2 of 3 members came back without state)"))
	g.Expect(d.Key()).To(Equal(DataLossReported + ":db-2"))
}

// Followers that restarted empty while the leader serves (memory
// durability) catch up from it: nothing is lost, whatever their epoch.
// Without a serving leader, a majority behind the record is a loss even
// while it catches up: members that all restarted empty catch up from each
// other (or found a new cluster), and two empty members of three cannot
// vouch for the votes they forgot (docs/replication.md, "Members that lose
// their memory").
func TestMembersBehindAServingLeaderAreNotDataLossButAMajorityCatchingUpIs(t *testing.T) {
	g := NewWithT(t)
	rec := &rolisv1.EpochRecord{Epoch: 2, LeaderId: 1, Watermark: key(1, 10)}
	seen := SeenWatermark(rec, key(2, 70))
	leader := member(1, 2, key(2, 70))
	leader.Status.Role = rolisv1.Role_LEADER
	members := []Member{leader, member(2, 0, key(0, 0)), member(3, 0, key(0, 0))}
	g.Expect(AssessDataLoss(members, rec, seen).Lost).To(BeFalse())

	members[0] = member(1, 0, key(0, 0))
	g.Expect(AssessDataLoss(members, rec, seen).Lost).To(BeTrue(), "without the leader, the three lost it")
	members[1].Status.Role = rolisv1.Role_CATCHING_UP
	members[2].Status.Role = rolisv1.Role_CATCHING_UP
	g.Expect(AssessDataLoss(members, rec, seen).Lost).To(BeTrue(), "catching up from each other does not bring the data back")
	members[0] = member(1, 2, key(2, 70))
	g.Expect(AssessDataLoss(members, rec, seen).Lost).To(BeTrue(), "two of three forgot their votes")
	members[2] = member(3, 2, key(2, 70))
	g.Expect(AssessDataLoss(members, rec, seen).Lost).To(BeFalse(), "one catching up while a majority holds the record")
}

// A loss is cleared only by members that show it is gone: while the
// members are away (pods restarting), "no evidence" is not "no loss".
func TestOnlyMembersThatAnswerClearADataLoss(t *testing.T) {
	g := NewWithT(t)
	rec := &rolisv1.EpochRecord{Epoch: 2, LeaderId: 1, Watermark: key(1, 300)}
	seen := SeenWatermark(rec, key(2, 900))
	away := func(id int32) Member { return Member{ID: id, Pod: "db-x", Err: errors.New("connection refused")} }

	allAway := AssessDataLoss([]Member{away(1), away(2), away(3)}, rec, seen)
	g.Expect(allAway.Lost).To(BeFalse(), "nobody answered: nothing is known lost")
	g.Expect(allAway.Cleared).To(BeFalse(), "and nothing is shown kept either")

	oneBack := AssessDataLoss([]Member{member(1, 2, key(2, 900)), away(2), away(3)}, rec, seen)
	g.Expect(oneBack.Cleared).To(BeFalse(), "one current member of three is no majority")

	twoBack := AssessDataLoss([]Member{member(1, 2, key(2, 900)), member(2, 2, key(2, 880)), away(3)}, rec, seen)
	g.Expect(twoBack.Lost).To(BeFalse())
	g.Expect(twoBack.Cleared).To(BeTrue(), "a majority holds the record")
}
