/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"fmt"
	"sort"
	"strings"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// Reasons of a data loss (docs/operator.md, "Data loss").
const (
	// DataLossReported: a member reports data_loss_suspected (rolisd saw
	// that the members holding the cluster's data are too few to rebuild
	// it).
	DataLossReported = "MemberReportsDataLoss"
	// DataLossMajorityBehind: a majority of members answer with a state
	// older than the decided record: they never took part in deciding it
	// and hold less than it decided (memory durability after a restart of
	// a majority, or lost volumes).
	DataLossMajorityBehind = "MajorityBehindRecord"
)

// KnownEpoch is the highest epoch member m took part in: the epoch it is
// in, the epoch it promised, and the newest decided record it knows. A
// member that promised the record's epoch voted in its Prepare, so it kept
// its state across the decision; with durability disk a promise survives
// a restart.
func KnownEpoch(m *Member) uint64 {
	st := m.Status
	return max(st.GetEpoch(), st.GetPromisedEpoch(), st.GetDecided().GetEpoch())
}

// SeenWatermark is the latest watermark known to have been decided: the
// record's G' or the serving leader's G the operator last saw (the
// cluster's status.watermark), whichever is later. The record's G' alone is
// the watermark at the decision, often (0,0) right after the first
// election, however much was written since.
func SeenWatermark(rec *rolisv1.EpochRecord, status *rolisv1.LogKey) *rolisv1.LogKey {
	if CompareKeys(status, rec.GetWatermark()) > 0 {
		return status
	}
	if rec.GetWatermark() == nil {
		return &rolisv1.LogKey{}
	}
	return rec.GetWatermark()
}

// BehindRecord reports whether member m answered with a state older than
// the decided record: every epoch it knows is below the record's epoch,
// and its watermark G is below the latest decided watermark seen. In
// normal operation a majority has promised the record's epoch (it could
// not have been decided otherwise), so a majority behind it lost its
// state. While the operator has seen nothing decided past (0,0), nothing
// acknowledged is known to be lost, and no member is behind.
func BehindRecord(m *Member, rec *rolisv1.EpochRecord, seen *rolisv1.LogKey) bool {
	if !m.Reachable() || rec.GetEpoch() == 0 {
		return false
	}
	return KnownEpoch(m) < rec.GetEpoch() && CompareKeys(m.Status.GetWatermark(), seen) < 0
}

// DescribeState names a member with its epochs and watermark, as events
// and logs put it against the record.
func DescribeState(m *Member) string {
	st := m.Status
	return fmt.Sprintf("%s (epoch %d, promised %d, decided %d, watermark %s)", m.Pod,
		st.GetEpoch(), st.GetPromisedEpoch(), st.GetDecided().GetEpoch(), keyText(st.GetWatermark()))
}

// DescribeRecord is the record as DescribeState compares members with it.
func DescribeRecord(rec *rolisv1.EpochRecord, seen *rolisv1.LogKey) string {
	return fmt.Sprintf("the decided record (epoch %d, leader %d, watermark %s, last seen watermark %s)",
		rec.GetEpoch(), rec.GetLeaderId(), keyText(rec.GetWatermark()), keyText(seen))
}

func keyText(k *rolisv1.LogKey) string { return fmt.Sprintf("(%d,%d)", k.GetEpoch(), k.GetTs()) }

// DataLoss is what the members say about lost data.
type DataLoss struct {
	// Reporting are the members that report data_loss_suspected.
	Reporting []*Member
	// Behind are the members whose state is older than the record.
	Behind []*Member
	// Lost: a member reports data loss, or a majority is behind the
	// record. No promotion may go on: it would found an empty or older
	// database in place of acknowledged writes.
	Lost bool
	// Reason (DataLossReported, DataLossMajorityBehind) and Message, with
	// Lost.
	Reason  string
	Message string
	// Cleared: the members show that nothing is lost, not merely that
	// nothing is known lost: a leader of the decided epoch serves, or a
	// majority answers with a state no older than the record and reports
	// no loss. While members are down or restarting, neither holds, and a
	// loss found before stands (the operator must not say "resolved" while
	// the members that would show it are still away).
	Cleared bool
}

// Key identifies the state for "one event per state": the reason and the
// members concerned.
func (d DataLoss) Key() string {
	if !d.Lost {
		return ""
	}
	names := make([]string, 0, len(d.Reporting)+len(d.Behind))
	for _, m := range append(append([]*Member{}, d.Reporting...), d.Behind...) {
		names = append(names, m.Pod)
	}
	sort.Strings(names)
	return d.Reason + ":" + strings.Join(names, ",")
}

// AssessDataLoss looks for lost data in a probe of every member against the
// decided record and the last watermark seen (SeenWatermark).
func AssessDataLoss(members []Member, rec *rolisv1.EpochRecord, seen *rolisv1.LogKey) DataLoss {
	var d DataLoss
	serving, current := false, 0
	for i := range members {
		m := &members[i]
		if m.Reachable() && m.Status.GetDataLossSuspected() {
			d.Reporting = append(d.Reporting, m)
		} else if m.Reachable() && !BehindRecord(m, rec, seen) {
			current++
		}
		// A member catching up counts too: while no leader of the decided
		// epoch serves (below), nothing guarantees that what it lost is
		// held by a majority of the others (members that all restarted
		// empty catch up from each other, or found a new cluster).
		if BehindRecord(m, rec, seen) {
			d.Behind = append(d.Behind, m)
		}
		st := m.Status
		if m.Reachable() && st.GetRole() == rolisv1.Role_LEADER && st.GetHealthy() && st.GetEpoch() >= rec.GetEpoch() {
			serving = true
		}
	}
	if serving {
		// A leader of the decided epoch holds everything decided; members
		// that restarted empty catch up from it.
		d.Behind = nil
	}
	d.Cleared = serving || current >= Majority(len(members))
	switch {
	case len(d.Reporting) > 0:
		var says []string
		for _, m := range d.Reporting {
			says = append(says, fmt.Sprintf("%s: %s", m.Pod, m.Status.GetDataLossReason()))
		}
		d.Lost, d.Reason = true, DataLossReported
		d.Message = fmt.Sprintf("%d of %d members report suspected data loss (%s)", len(d.Reporting), len(members), strings.Join(says, "; "))
	case len(d.Behind) >= Majority(len(members)):
		var states []string
		for _, m := range d.Behind {
			states = append(states, DescribeState(m))
		}
		d.Lost, d.Reason = true, DataLossMajorityBehind
		d.Message = fmt.Sprintf("%d of %d members answer with a state older than %s: %s; a majority lost what it acknowledged",
			len(d.Behind), len(members), DescribeRecord(rec, seen), strings.Join(states, ", "))
	}
	return d
}
