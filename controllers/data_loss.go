/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// Reasons of data loss conditions and events (docs/operator.md, "Data loss").
const (
	// ReasonDataLossSuspected is the Degraded reason and the Warning event
	// of a data loss; the DataLoss condition's reason says which evidence
	// (leadership.DataLossReported, leadership.DataLossMajorityBehind).
	ReasonDataLossSuspected = "DataLossSuspected"
	ReasonNoDataLoss        = "NoDataLoss"
	ReasonDataLossResolved  = "DataLossResolved"
	// ReasonCandidateBehindRecord: the member to promote is older than the
	// decided record while a majority still holds it (a Warning event).
	ReasonCandidateBehindRecord = "CandidateBehindRecord"
	// ReasonDurabilityMismatch: a member reports another durability than
	// spec.durability.
	ReasonDurabilityMismatch = "DurabilityMismatch"
)

// checkDataLoss compares every member's answer with the decided record and
// the last watermark seen (docs/operator.md, "Data loss"). On a loss it
// sets DataLoss and Degraded (first, as the most pressing finding), makes
// one Warning event and one log line per state, and leaves s.dataLoss.Lost
// set, which stops every promotion (promote): electing from members that
// lost their state would serve an empty or older database in place of
// acknowledged writes. It also reports members whose durability is not the
// spec's.
func (r *Reconciler) checkDataLoss(ctx context.Context, s *state) {
	c, rec := s.cluster, s.stored.Record
	logger := log.FromContext(ctx)
	s.seen = leadership.SeenWatermark(rec, protoKey(c.Status.Watermark))
	s.dataLoss = leadership.AssessDataLoss(s.members, rec, s.seen)
	if prev := s.mem.lastDataLoss; !s.dataLoss.Lost && !s.dataLoss.Cleared && prev.Lost {
		// Members are away (restarting, unreachable): what they showed
		// last still stands until they show otherwise.
		s.dataLoss = prev
	}
	s.mem.lastDataLoss = s.dataLoss
	r.checkDurability(s)

	d := s.dataLoss
	if !d.Lost {
		s.condition(dbv1.ConditionDataLoss, false, ReasonNoDataLoss,
			"no member reports lost data and no majority is behind the decided epoch record")
		if s.mem.dataLoss != "" {
			s.mem.dataLoss = ""
			r.event(c, corev1.EventTypeNormal, ReasonDataLossResolved, "Check",
				"no member reports lost data any more and no majority is behind the decided epoch record")
			logger.Info("data loss no longer suspected")
		}
		return
	}
	back := fmt.Sprintf("bring back the members' volumes (their data directories, PVCs %s)", claimNames(c, d))
	if c.DurabilityMode() == dbv1.DurabilityMemory {
		back = "with durability memory the volumes hold nothing, so only members that still run can bring it back"
	}
	msg := fmt.Sprintf("%s. The operator promotes no member until this clears: %s, or accept the loss explicitly "+
		"(docs/operations.md, \"Data loss under the operator\")", d.Message, back)
	s.condition(dbv1.ConditionDataLoss, true, d.Reason, msg)
	s.problems = append([]finding{{ReasonDataLossSuspected, msg}}, s.problems...)
	if key := d.Key(); s.mem.dataLoss != key {
		s.mem.dataLoss = key
		r.event(c, corev1.EventTypeWarning, ReasonDataLossSuspected, "Check", "%s", msg)
		logger.Info("DATA LOSS SUSPECTED: "+msg, "reason", d.Reason, "recordEpoch", rec.GetEpoch(),
			"recordWatermark", keyString(rec.GetWatermark()), "seenWatermark", keyString(s.seen))
	}
}

// claimNames names the PersistentVolumeClaims of the members concerned.
func claimNames(c *dbv1.RolisCluster, d leadership.DataLoss) string {
	seen := map[int32]bool{}
	var names []string
	for _, m := range append(append([]*leadership.Member{}, d.Reporting...), d.Behind...) {
		if !seen[m.ID] {
			seen[m.ID] = true
			names = append(names, specs.DataVolume+"-"+m.Pod)
		}
	}
	return strings.Join(names, ", ")
}

// checkDurability reports members that say they run with another
// durability than the spec's (an image whose rolisd ignores
// ROLISD_DURABILITY, or a pod template changed by hand). A member that
// does not say (an older rolisd) is left alone.
func (r *Reconciler) checkDurability(s *state) {
	want := string(s.cluster.DurabilityMode())
	var off []string
	for i := range s.members {
		m := &s.members[i]
		if got := m.Status.GetDurability(); m.Reachable() && got != "" && got != want {
			off = append(off, fmt.Sprintf("%s runs with durability %s", m.Pod, got))
		}
	}
	if len(off) > 0 {
		s.problem(ReasonDurabilityMismatch, fmt.Sprintf("%s while spec.durability is %s: its acknowledgements do not promise what the spec says",
			strings.Join(off, ", "), want))
	}
}

// warnIfBehindRecord says so when the member about to be promoted is older
// than the decided record while a majority still holds it: the promotion is
// safe (PrepareFailover gathers every slot from a majority, and members
// that lost their state do not vote until they caught up), but it is never
// silent.
func (r *Reconciler) warnIfBehindRecord(ctx context.Context, s *state, cand *leadership.Member) {
	rec := s.stored.Record
	if !leadership.BehindRecord(cand, rec, s.seen) {
		return
	}
	msg := fmt.Sprintf("promoting %s, which is older than %s: %d of %d members are behind it, so a majority still holds it and PrepareFailover gathers it from them",
		leadership.DescribeState(cand), leadership.DescribeRecord(rec, s.seen), len(s.dataLoss.Behind), len(s.members))
	r.event(s.cluster, corev1.EventTypeWarning, ReasonCandidateBehindRecord, "Promote", "%s", msg)
	log.FromContext(ctx).Info(msg, "member", cand.Pod, "epoch", cand.Status.GetEpoch(),
		"watermark", keyString(cand.Status.GetWatermark()), "recordEpoch", rec.GetEpoch())
}

// protoKey is the status form of a watermark back in the wire form.
func protoKey(k *dbv1.LogKey) *rolisv1.LogKey {
	if k == nil {
		return nil
	}
	return &rolisv1.LogKey{Epoch: uint64(k.Epoch), Ts: uint64(k.TS)}
}
