/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
)

// ReasonRollingRestart is the reason of a rolling restart in progress.
const ReasonRollingRestart = "RollingRestart"

// reconcileRollout restarts members whose pod runs an older StatefulSet
// revision (a change of image, threads, batching or pod overrides). The
// StatefulSet's update strategy is OnDelete, so nothing restarts unless this
// step deletes the pod: followers one at a time, then a switchover, then the
// old leader (leadership.PlanRollout).
func (r *Reconciler) reconcileRollout(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	if r := s.mem.restarting; r != nil {
		p, m := s.pods[r.id], s.member(r.id)
		if p == nil || p.UID == r.uid || m == nil || !m.Ready || !m.Reachable() {
			s.progressing(ReasonRollingRestart, fmt.Sprintf("waiting for %s to come back", specs.PodName(c, r.id)))
			return proceed, nil
		}
		s.mem.restarting = nil
	}
	leaderID, settled := s.leaderID, false
	switch s.assessment.State {
	case leadership.Serving:
		settled = true
	case leadership.NoLeader:
		// Nothing was ever decided, so a restart cannot lose anything.
		leaderID, settled = -1, true
	}
	a := leadership.PlanRollout(s.members, leaderID, settled)
	switch a.Kind {
	case leadership.Nothing:
		return proceed, nil
	case leadership.Wait:
		if s.hasOutdated() {
			s.progressing(ReasonRollingRestart, a.Reason)
		}
		return proceed, nil
	case leadership.Switchover:
		s.progressing(ReasonRollingRestart, a.Reason)
		exclude := map[int32]bool{a.ID: true}
		for i := range s.members {
			if s.members[i].Outdated {
				exclude[s.members[i].ID] = true
			}
		}
		return r.promote(ctx, s, exclude, a.Reason)
	case leadership.DeletePod:
		s.progressing(ReasonRollingRestart, a.Reason)
		p := s.pods[a.ID]
		if p == nil {
			return proceed, nil
		}
		if err := r.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			return proceed, err
		}
		s.mem.restarting = &restartingPod{id: a.ID, uid: p.UID}
		r.event(c, corev1.EventTypeNormal, ReasonRollingRestart, "Restart", "%s: deleted %s", a.Reason, podDescription(p))
		return stopFor(time.Second), nil
	}
	return proceed, nil
}

func (s *state) hasOutdated() bool {
	for i := range s.members {
		if s.members[i].Outdated {
			return true
		}
	}
	return false
}
