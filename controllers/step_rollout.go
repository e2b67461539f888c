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

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
)

// ReasonRollingRestart is the reason of a rolling restart in progress.
const ReasonRollingRestart = "RollingRestart"

// reconcileRollout restarts members whose pod runs an older StatefulSet
// revision (a change of image, threads, batching or pod overrides). The
// StatefulSet's update strategy is OnDelete, so nothing restarts unless this
// step deletes the pod: followers one at a time, then a switchover, then the
// old leader (leadership.PlanRollout). A restart request is a revision too:
// rolis.io/restartedAt goes into the pod template (specs.PodTemplate), and
// rolis.io/restartMember makes the member it names count as outdated.
func (r *Reconciler) reconcileRollout(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	if r := s.mem.restarting; r != nil {
		p, m := s.pods[r.id], s.member(r.id)
		replaced := p != nil && p.UID != r.uid && m != nil
		switch {
		case replaced && m.Ready && m.Reachable():
		case replaced && m.Outdated:
			// The replacement runs a revision the spec has moved past: it
			// came up broken (the pods step says why) and the spec was
			// changed again. PlanRollout replaces it while it is down.
		default:
			// Also when the replacement cannot run: the rollout stops at
			// the first broken pod, so the other members keep serving.
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
	members, restartID, restartWant, err := r.restartRequest(ctx, s)
	if err != nil {
		return proceed, err
	}
	a := leadership.PlanRollout(members, leaderID, settled)
	switch a.Kind {
	case leadership.Nothing:
		return proceed, nil
	case leadership.Wait:
		if hasOutdated(members) {
			s.progressing(ReasonRollingRestart, a.Reason)
		}
		return proceed, nil
	case leadership.Switchover:
		s.progressing(ReasonRollingRestart, a.Reason)
		exclude := map[int32]bool{a.ID: true}
		for i := range members {
			if members[i].Outdated {
				exclude[members[i].ID] = true
			}
		}
		out, err := r.promote(ctx, s, exclude, a.Reason)
		if err == nil {
			r.switchedOver(s, a.ID, SwitchoverRestart)
		}
		return out, err
	case leadership.DeletePod:
		s.progressing(ReasonRollingRestart, a.Reason)
		p := s.pods[a.ID]
		if p == nil {
			return proceed, nil
		}
		if a.ID == restartID {
			// Cleared first: a restart asked for once happens at most once,
			// even if the operator stops right after the deletion.
			if err := r.clearAnnotation(ctx, c, dbv1.AnnotationRestartMember, restartWant); err != nil {
				return proceed, err
			}
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

// restartRequest reads the rolis.io/restartMember annotation: the members
// to plan the rollout with (the named one counts as outdated, so the
// rollout restarts it the safe way: once the cluster is settled, and after
// a switchover when it leads), and its id (-1 without a request). A request
// naming no member is dropped with a Warning event.
func (r *Reconciler) restartRequest(ctx context.Context, s *state) ([]leadership.Member, int32, string, error) {
	c := s.cluster
	want, ok := c.Annotations[dbv1.AnnotationRestartMember]
	if !ok {
		return s.members, -1, "", nil
	}
	id, err := memberNamed(c, s.replicas, want)
	if err != nil {
		r.event(c, corev1.EventTypeWarning, ReasonRollingRestart, "Restart", "%s=%q: %v; request dropped", dbv1.AnnotationRestartMember, want, err)
		return s.members, -1, "", r.clearAnnotation(ctx, c, dbv1.AnnotationRestartMember, want)
	}
	members := append([]leadership.Member(nil), s.members...)
	for i := range members {
		if members[i].ID == id {
			members[i].Outdated = true
		}
	}
	return members, id, want, nil
}

func hasOutdated(members []leadership.Member) bool {
	for i := range members {
		if members[i].Outdated {
			return true
		}
	}
	return false
}
