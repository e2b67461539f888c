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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// Reasons of membership conditions and events.
const (
	ReasonScaling                     = "Scaling"
	ReasonWaitingForLeader            = "WaitingForLeader"
	ReasonMembershipUnknown           = "MembershipUnknown"
	ReasonMembershipChangeFailed      = "MembershipChangeFailed"
	ReasonMembershipChangeUnsupported = "MembershipChangeUnsupported"
	ReasonMembershipChanged           = "MembershipChanged"
)

// reconcileMembership scales the cluster one member at a time through the
// leader's ChangeMembership (leadership.PlanMembership states the rule).
// Scaling needs a serving leader: without one nothing can be agreed, and
// the StatefulSet keeps its size.
func (r *Reconciler) reconcileMembership(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	desired := c.DesiredReplicas()
	if s.assessment.State != leadership.Serving {
		if s.replicas != desired {
			s.progressing(ReasonWaitingForLeader, fmt.Sprintf("scaling %d→%d waits for a serving leader", s.replicas, desired))
		}
		return proceed, nil
	}
	leader := s.assessment.Leader
	current := leadership.MemberIDs(leader.Status.GetMembers())
	if len(current) == 0 {
		if s.replicas != desired {
			s.problem(ReasonMembershipUnknown, fmt.Sprintf("scaling %d→%d: leader %s reports no membership, so no change can be made safely", s.replicas, desired, leader.Pod))
		}
		return proceed, nil
	}

	a := leadership.PlanVoters(desired, s.replicas, current, s.leaderID, s.members, s.fence.fenced)
	switch a.Kind {
	case leadership.Nothing:
		return proceed, nil
	case leadership.Wait:
		s.progressing(ReasonScaling, a.Reason)
		return proceed, nil
	case leadership.Switchover:
		s.progressing(ReasonScaling, a.Reason)
		exclude := map[int32]bool{a.ID: true}
		return r.promote(ctx, s, exclude, a.Reason)
	case leadership.GrowStatefulSet, leadership.ShrinkStatefulSet:
		s.progressing(ReasonScaling, a.Reason)
		if err := r.resize(ctx, s, a.Replicas); err != nil {
			return proceed, err
		}
		r.event(c, corev1.EventTypeNormal, ReasonScaling, "Scale", "%s", a.Reason)
		return stopFor(time.Second), nil
	case leadership.AddMember, leadership.RemoveMember:
		s.progressing(ReasonScaling, a.Reason)
		now, b := r.now(), &s.mem.membership
		if now.Before(b.notBefore) {
			s.problem(b.reason, b.message)
			return stopFor(b.notBefore.Sub(now)), nil
		}
		if err := r.changeMembership(ctx, s, a.Members); err != nil {
			reason := ReasonMembershipChangeFailed
			msg := fmt.Sprintf("%s: ChangeMembership on %s: %s", a.Reason, leader.Pod, leadership.ShortError(err))
			if leadership.Unimplemented(err) {
				reason = ReasonMembershipChangeUnsupported
				msg = fmt.Sprintf("%s: %s answered UNIMPLEMENTED to ChangeMembership: this rolisd cannot change its membership", a.Reason, leader.Pod)
			}
			wait := b.fail(now, c.FailoverTimeout(), reason, msg)
			r.event(c, corev1.EventTypeWarning, reason, "ChangeMembership", "%s; next attempt in %s", msg, wait)
			s.problem(reason, msg)
			return stopFor(wait), nil
		}
		b.reset()
		r.event(c, corev1.EventTypeNormal, ReasonMembershipChanged, "ChangeMembership", "%s: members are now %v", a.Reason, a.Members)
		return stopFor(time.Second), nil
	}
	return proceed, nil
}

// resize sets the StatefulSet's replicas. The ConfigMap's peer list is
// written first when growing, so the new pod starts knowing itself.
func (r *Reconciler) resize(ctx context.Context, s *state, replicas int32) error {
	c := s.cluster
	cm := &corev1.ConfigMap{}
	desired := specs.EngineConfigMap(c, replicas, r.Options)
	if _, err := r.apply(ctx, cm, desired, func() { cm.Data = desired.Data }); err != nil {
		return err
	}
	sts := s.sts.DeepCopy()
	patch := client.MergeFrom(s.sts)
	sts.Spec.Replicas = ptr.To(replicas)
	if err := r.Patch(ctx, sts, patch); err != nil {
		return err
	}
	s.sts, s.replicas = sts, replicas
	return nil
}

func (r *Reconciler) changeMembership(ctx context.Context, s *state, ids []int32) error {
	c := s.cluster
	members := make([]*rolisv1.Member, 0, len(ids))
	for _, id := range ids {
		if r.MemberAddresses != nil {
			members = append(members, r.MemberAddresses(c, id))
		} else {
			members = append(members, peerMember(c, id, r.Options))
		}
	}
	admin, err := r.Dialer.Dial(ctx, s.target(s.leaderID))
	if err != nil {
		return err
	}
	defer admin.Close() //nolint:errcheck
	cctx, cancel := context.WithTimeout(ctx, r.Timeouts.Open)
	defer cancel()
	_, err = admin.ChangeMembership(cctx, &rolisv1.ChangeMembershipRequest{Members: members})
	return err
}

// peerMember is member id as its pod serves it: the replication address the
// StatefulSet's --peers list gives (the pod's DNS name under the headless
// Service), and the admin and client ports on the same name.
func peerMember(c *dbv1.RolisCluster, id int32, o specs.Options) *rolisv1.Member {
	host := specs.PeerHost(c, id, o)
	return &rolisv1.Member{Id: uint32(id), Address: specs.PeerAddress(c, id, o),
		AdminAddress: fmt.Sprintf("%s:%d", host, specs.AdminPort), ClientAddress: fmt.Sprintf("%s:%d", host, specs.ClientPort)}
}
