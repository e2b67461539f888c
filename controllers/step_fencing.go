/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// Reasons of the Fenced condition and its events.
const (
	ReasonFenced       = "Fenced"
	ReasonFencing      = "Fencing"
	ReasonNoneFenced   = "NoneFenced"
	ReasonFenceRefused = "FenceRefused"
)

// fence is what spec.fencedMembers means for this reconcile.
type fence struct {
	// fenced are the members kept out of the voting configuration (and of
	// every promotion): spec.fencedMembers, or, when that fence is
	// refused, only the members already out, so that a refused request
	// changes nothing.
	fenced map[int32]bool
	// out are the fenced members the configuration in force no longer has.
	out []int32
	// refused says why spec.fencedMembers is refused ("" when it is not).
	refused string
}

// planFence is the pure part of checkFencing: the spec's fence against the
// configuration in force (config: nil when no member reported one).
func planFence(desired int32, spec []int32, config []int32) fence {
	f := fence{fenced: map[int32]bool{}, refused: leadership.FenceAllowed(desired, spec)}
	for _, id := range spec {
		known := config != nil
		inConfig := slices.Contains(config, id)
		if known && !inConfig && id <= desired {
			f.out = append(f.out, id)
		}
		if f.refused == "" || (known && !inConfig) {
			f.fenced[id] = true
		}
	}
	slices.Sort(f.out)
	return f
}

// configuration is the voting configuration of the newest decided record
// any member reports (nil when none reports one).
func configuration(members []leadership.Member) []int32 {
	var newest *rolisv1.EpochRecord
	for i := range members {
		if !members[i].Reachable() {
			continue
		}
		if d := members[i].Status.GetDecided(); len(d.GetMembers()) > 0 && (newest == nil || leadership.NewerRecord(d, newest)) {
			newest = d
		}
	}
	if newest == nil {
		return nil
	}
	return leadership.MemberIDs(newest.GetMembers())
}

// checkFencing works out spec.fencedMembers against the members' reported
// configuration and says so in the Fenced condition; the membership step
// removes and adds the members (leadership.PlanVoters), promotions leave
// fenced members out, and moveLeaderLabel labels their pods role=fenced.
func (r *Reconciler) checkFencing(_ context.Context, s *state) (outcome, error) {
	c := s.cluster
	s.fence = planFence(c.DesiredReplicas(), c.Spec.FencedMembers, configuration(s.members))
	f := &s.fence
	c.Status.FencedMembers = f.out
	if f.refused != "" {
		msg := f.refused + ": the fence is refused and nothing changes; unfence a member or scale up first"
		s.problem(ReasonFenceRefused, msg)
		s.condition(dbv1.ConditionFenced, len(f.out) > 0, ReasonFenceRefused, msg)
		if s.mem.fenceRefused != f.refused {
			s.mem.fenceRefused = f.refused
			r.event(c, corev1.EventTypeWarning, ReasonFenceRefused, "Fence", "%s", msg)
		}
		return proceed, nil
	}
	s.mem.fenceRefused = ""
	var pending []int32
	for id := range f.fenced {
		if !slices.Contains(f.out, id) {
			pending = append(pending, id)
		}
	}
	slices.Sort(pending)
	switch {
	case len(pending) > 0:
		msg := fmt.Sprintf("fencing members %v: removing them from the voting configuration one at a time", pending)
		if len(f.out) > 0 {
			msg += fmt.Sprintf("; members %v are fenced", f.out)
		}
		s.condition(dbv1.ConditionFenced, len(f.out) > 0, ReasonFencing, msg)
		s.progressing(ReasonFencing, msg)
	case len(f.out) > 0:
		s.condition(dbv1.ConditionFenced, true, ReasonFenced,
			fmt.Sprintf("members %v are fenced: out of the voting configuration, never candidates, their pods out of the client Service", f.out))
	default:
		s.condition(dbv1.ConditionFenced, false, ReasonNoneFenced, "no member is fenced")
	}
	return proceed, nil
}

// fencedOut says whether member id is fenced and out of the configuration.
func (s *state) fencedOut(id int32) bool { return slices.Contains(s.fence.out, id) }

// withFenced adds the fenced members to a promotion's exclusions.
func (s *state) withFenced(exclude map[int32]bool) map[int32]bool {
	if len(s.fence.fenced) == 0 {
		return exclude
	}
	out := map[int32]bool{}
	for id, v := range exclude {
		out[id] = v
	}
	for id := range s.fence.fenced {
		out[id] = true
	}
	return out
}
