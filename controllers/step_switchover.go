/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
)

// Reasons of switchover events and conditions.
const (
	ReasonSwitchover         = "Switchover"
	ReasonSwitchoverWaiting  = "SwitchoverWaiting"
	ReasonSwitchoverRejected = "SwitchoverRejected"
	SwitchoverRequested      = "Requested"
	SwitchoverRestart        = "Restart"
)

// reconcileSwitchover acts on the rolis.io/promote annotation: a planned
// switchover to the member it names. The promotion is the failover
// protocol with that member as the only candidate (PrepareFailover,
// DecideEpoch, OpenEpoch; docs/replication.md, "Failover to epoch e'"), so
// no acknowledged write is lost: the candidate's Prepare gathers every slot
// from a majority, and the old leader is fenced by the new epoch's promises.
// The request waits for a serving leader and an eligible target; a request
// that can never be honoured (no such member, a fenced one) is dropped with
// a Warning event. Done or dropped, the annotation is removed.
func (r *Reconciler) reconcileSwitchover(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	want, ok := c.Annotations[dbv1.AnnotationPromote]
	if !ok {
		return proceed, nil
	}
	id, err := memberNamed(c, s.replicas, want)
	if err == nil && s.fence.fenced[id] {
		err = fmt.Errorf("member %d is fenced (spec.fencedMembers)", id)
	}
	if err != nil {
		msg := fmt.Sprintf("%s=%q: %v; request dropped", dbv1.AnnotationPromote, want, err)
		r.event(c, corev1.EventTypeWarning, ReasonSwitchoverRejected, "Switchover", "%s", msg)
		return proceed, r.clearAnnotation(ctx, c, dbv1.AnnotationPromote, want)
	}
	if s.assessment.State != leadership.Serving {
		s.progressing(ReasonSwitchoverWaiting, fmt.Sprintf("switchover to %s waits for a serving leader: %s", specs.PodName(c, id), s.assessment.Reason))
		return proceed, nil
	}
	if id == s.leaderID {
		return proceed, r.clearAnnotation(ctx, c, dbv1.AnnotationPromote, want)
	}
	m := s.member(id)
	if m == nil {
		s.progressing(ReasonSwitchoverWaiting, fmt.Sprintf("switchover to %s waits for its pod", specs.PodName(c, id)))
		return proceed, nil
	}
	if ok, why := leadership.Eligible(m); !ok {
		s.progressing(ReasonSwitchoverWaiting, fmt.Sprintf("switchover to %s waits: it %s", m.Pod, why))
		return proceed, nil
	}
	exclude := map[int32]bool{}
	for i := range s.members {
		if s.members[i].ID != id {
			exclude[s.members[i].ID] = true
		}
	}
	from := s.leaderID
	s.mem.noteLeaderChange(ChangeRequested, r.now(), s.stored.Record.GetEpoch())
	out, err := r.promote(ctx, s, exclude, fmt.Sprintf("switchover to %s requested (%s)", m.Pod, dbv1.AnnotationPromote))
	if err != nil || !r.switchedOver(s, from, SwitchoverRequested) {
		return out, err
	}
	return out, r.clearAnnotation(ctx, c, dbv1.AnnotationPromote, want)
}

// switchedOver records a planned switchover away from member from once the
// promotion that followed it left another member serving: status
// lastSwitchover and a Switchover event. It says whether it did.
func (r *Reconciler) switchedOver(s *state, from int32, reason string) bool {
	c := s.cluster
	if s.assessment.State != leadership.Serving || s.leaderID == from {
		return false
	}
	rec := &dbv1.SwitchoverRecord{From: specs.PodName(c, from), To: specs.PodName(c, s.leaderID),
		Epoch: int64(s.stored.Record.GetEpoch()), Time: metav1.NewTime(r.now()), Reason: reason}
	c.Status.LastSwitchover = rec
	r.event(c, corev1.EventTypeNormal, ReasonSwitchover, "Switchover", "switched over from %s to %s (epoch %d, %s)",
		rec.From, rec.To, rec.Epoch, reason)
	return true
}

// memberNamed reads a member named by its pod name ("db-2") or its id
// ("2"); it must be one of the cluster's members (1..replicas).
func memberNamed(c *dbv1.RolisCluster, replicas int32, name string) (int32, error) {
	name = strings.TrimSpace(name)
	idText := strings.TrimPrefix(name, c.Name+"-")
	id, err := strconv.ParseInt(idText, 10, 32)
	if err != nil || (idText == name && strings.Contains(name, "-")) {
		return 0, fmt.Errorf("%q names no member: give a pod name (%s) or an id (1..%d)", name, specs.PodName(c, 1), replicas)
	}
	if int32(id) < specs.FirstOrdinal || int32(id) >= specs.FirstOrdinal+replicas {
		return 0, fmt.Errorf("no member %d: the cluster runs members 1..%d", id, replicas)
	}
	return int32(id), nil
}

// clearAnnotation removes a request annotation if it still holds the value
// acted on (a JSON patch with a test: a newer request is never dropped).
func (r *Reconciler) clearAnnotation(ctx context.Context, c *dbv1.RolisCluster, key, value string) error {
	path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": path, "value": value},
		{"op": "remove", "path": path},
	})
	if err != nil {
		return err
	}
	obj := &dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name}}
	err = r.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
	if err != nil && isPatchTestFailure(err) {
		return nil // the annotation changed or went: nothing of ours to remove
	}
	return client.IgnoreNotFound(err)
}

// isPatchTestFailure says whether a JSON patch failed on its test
// operation: the API server answers 422 Unprocessable Entity ("the server
// rejected our request due to an error in our request"). Removing an
// annotation cannot make the object invalid otherwise.
func isPatchTestFailure(err error) bool {
	return apierrors.IsInvalid(err)
}
