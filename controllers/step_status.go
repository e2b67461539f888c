/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
)

// Reasons of the summary conditions.
const (
	ReasonAsExpected     = "AsExpected"
	ReasonSettled        = "Settled"
	ReasonClusterReady   = "ClusterReady"
	ReasonNotReady       = "NotReady"
	ReasonReconciling    = "Reconciling"
	ReasonPodsStarting   = "PodsStarting"
	ReasonNoFailover     = "NoFailover"
	maxConditionMessage  = 4096
	conditionJoinedLimit = 4
)

// computeStatus turns what the steps found into the status: conditions,
// phase and observed generation. It is a pure function of the state.
func computeStatus(s *state) {
	c := s.cluster
	st := &c.Status
	gen := c.Generation
	set := func(t string, ok metav1.ConditionStatus, reason, msg string) {
		if len(msg) > maxConditionMessage {
			msg = msg[:maxConditionMessage]
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: ok, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	boolStatus := func(b bool) metav1.ConditionStatus {
		if b {
			return metav1.ConditionTrue
		}
		return metav1.ConditionFalse
	}

	if s.probed && st.ReadyReplicas < s.replicas {
		s.progressing(ReasonPodsStarting, fmt.Sprintf("%d of %d member pods are ready", st.ReadyReplicas, s.replicas))
	}

	// Degraded and Progressing: the first finding gives the reason, all
	// findings the message.
	if len(s.problems) > 0 {
		set(dbv1.ConditionDegraded, metav1.ConditionTrue, s.problems[0].reason, joinFindings(s.problems))
	} else {
		set(dbv1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected, "nothing needs attention")
	}
	if len(s.progress) > 0 {
		set(dbv1.ConditionProgressing, metav1.ConditionTrue, s.progress[0].reason, joinFindings(s.progress))
	} else if s.probed {
		set(dbv1.ConditionProgressing, metav1.ConditionFalse, ReasonSettled, "the cluster matches the spec")
	}

	// Leadership conditions need a probe; a reconcile that stopped earlier
	// leaves them as they were.
	serving := s.assessment.State == leadership.Serving
	if s.probed {
		switch s.assessment.State {
		case leadership.Serving:
			set(dbv1.ConditionAvailable, metav1.ConditionTrue, ReasonLeaderServing, s.assessment.Reason)
		case leadership.NoLeader:
			set(dbv1.ConditionAvailable, metav1.ConditionFalse, ReasonNoLeader, "no leader has been elected yet")
		case leadership.Opening:
			set(dbv1.ConditionAvailable, metav1.ConditionFalse, ReasonLeaderOpening, s.assessment.Reason)
		default:
			set(dbv1.ConditionAvailable, metav1.ConditionFalse, ReasonLeaderUnhealthy, s.assessment.Reason)
		}
		if s.failingOver != nil {
			set(dbv1.ConditionFailingOver, metav1.ConditionTrue, s.failingOver.reason, s.failingOver.message)
		} else {
			set(dbv1.ConditionFailingOver, metav1.ConditionFalse, ReasonNoFailover, "no failover in progress")
		}
		setReplicationLag(s)
		ready, why := clusterReady(s)
		if ready {
			set(dbv1.ConditionReady, metav1.ConditionTrue, ReasonClusterReady, fmt.Sprintf("%d members, %s", s.replicas, s.assessment.Reason))
		} else {
			set(dbv1.ConditionReady, metav1.ConditionFalse, ReasonNotReady, why)
		}
	} else {
		for _, t := range []string{dbv1.ConditionAvailable, dbv1.ConditionFailingOver, dbv1.ConditionReady} {
			if meta.FindStatusCondition(st.Conditions, t) == nil {
				set(t, metav1.ConditionUnknown, ReasonReconciling, "the members have not been probed yet")
			}
		}
	}

	for t, v := range s.extra {
		set(t, boolStatus(v.ok), v.reason, v.message)
	}
	if !c.TLSEnabled() && !s.tlsIssueFirst {
		meta.RemoveStatusCondition(&st.Conditions, ConditionCertificatesReady)
	}
	if c.TLSEnabled() {
		meta.RemoveStatusCondition(&st.Conditions, ConditionTLSDisabled)
	}
	if !c.Spec.Monitoring.Enabled {
		meta.RemoveStatusCondition(&st.Conditions, ConditionMonitoringReady)
	}

	st.Phase = phase(s, serving)
	st.ObservedGeneration = gen
}

func clusterReady(s *state) (bool, string) {
	if s.assessment.State != leadership.Serving {
		return false, "no serving leader: " + s.assessment.Reason
	}
	if s.cluster.DesiredReplicas() != s.replicas {
		return false, fmt.Sprintf("%d members, %d wanted", s.replicas, s.cluster.DesiredReplicas())
	}
	for i := range s.members {
		m := &s.members[i]
		switch {
		case !m.Ready:
			return false, m.Pod + " is not ready"
		case !m.Healthy():
			return false, m.Pod + " is not healthy: " + leadership.ShortError(m.Err)
		case m.Outdated:
			return false, m.Pod + " runs an older revision"
		}
	}
	if len(s.problems) > 0 {
		return false, s.problems[0].message
	}
	return true, ""
}

func phase(s *state, serving bool) dbv1.ClusterPhase {
	has := func(reason string) bool {
		for _, f := range s.progress {
			if f.reason == reason {
				return true
			}
		}
		return false
	}
	switch {
	case s.failingOver != nil:
		return dbv1.PhaseFailingOver
	case len(s.problems) > 0:
		return dbv1.PhaseDegraded
	case has(ReasonScaling) || has(ReasonWaitingForLeader):
		return dbv1.PhaseScaling
	case has(ReasonRollingRestart):
		return dbv1.PhaseUpgrading
	case !s.probed && s.sts == nil:
		return dbv1.PhasePending
	case !serving || len(s.progress) > 0:
		return dbv1.PhaseCreating
	}
	return dbv1.PhaseRunning
}

func joinFindings(fs []finding) string {
	msgs := make([]string, 0, len(fs))
	seen := map[string]bool{}
	for _, f := range fs {
		if seen[f.message] || len(msgs) == conditionJoinedLimit {
			continue
		}
		seen[f.message] = true
		msgs = append(msgs, f.message)
	}
	return strings.Join(msgs, "; ")
}

// updateStatus writes the status if it changed, with a merge patch (no
// resourceVersion: a stale cached cluster cannot make it fail, and the
// operator is the only writer of the status).
func (r *Reconciler) updateStatus(ctx context.Context, s *state) error {
	computeStatus(s)
	recordClusterMetrics(s.cluster)
	if equality.Semantic.DeepEqual(s.original.Status, s.cluster.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, s.cluster, client.MergeFrom(s.original)); err != nil {
		return err
	}
	s.original = s.cluster.DeepCopy()
	return nil
}
