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

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// A running plaintext cluster moves to mutual TLS in phases
// (docs/operations.md, "Turning TLS on or off for a running cluster"):
//
//  1. the certificates are issued (resolveTLSMode asks for them, the
//     members keep running plaintext); once they are Ready,
//     beginTLSTransition records dbv1.TLSModeToMutualAcceptPlaintext;
//  2. the StatefulSet gets the TLS flags and --tls-accept-plaintext and the
//     rollout step restarts the members one at a time (followers first):
//     each new member takes both, the old ones plaintext only, members
//     dial each other and the operator dials them in TLS first with a
//     plaintext fallback;
//  3. once every member runs that revision and is Ready,
//     advanceTLSTransition records dbv1.TLSModeToMutualRequireTLS: the
//     flag goes and the members roll again, now requiring TLS;
//  4. once every member runs that revision and is Ready, the mode is
//     recorded mutual.
//
// Every phase has its Progressing reason and an event.

// beginTLSTransition records the first rollout of the move to TLS, once
// the certificates are Ready (called by the certificates step).
func (r *Reconciler) beginTLSTransition(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	if err := r.recordTLSMode(ctx, s, dbv1.TLSModeToMutualAcceptPlaintext, ""); err != nil {
		return proceed, err
	}
	s.tlsIssueFirst = false
	msg := "the certificates are Ready: the members roll to take both TLS and plaintext (--tls-accept-plaintext)"
	r.event(c, corev1.EventTypeNormal, ReasonTLSTransitionAcceptPlaintext, "TLSTransition", "%s", msg)
	s.progressing(ReasonTLSTransitionAcceptPlaintext, msg)
	return proceed, nil // the StatefulSet step that follows writes the new flags
}

// advanceTLSTransition moves a transition to its next phase once every
// member runs the current one.
func (r *Reconciler) advanceTLSTransition(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	mode := c.Annotations[dbv1.AnnotationTLSMode]
	var running, next, reason, what string
	switch mode {
	case dbv1.TLSModeToMutualAcceptPlaintext:
		running, next, reason = dbv1.TLSModeToMutualAcceptPlaintext, dbv1.TLSModeToMutualRequireTLS, ReasonTLSTransitionAcceptPlaintext
		what = "take both TLS and plaintext"
	case dbv1.TLSModeToMutualRequireTLS:
		running, next, reason = dbv1.TLSModeMutual, dbv1.TLSModeMutual, ReasonTLSTransitionRequireTLS
		what = "require TLS"
	default:
		return proceed, nil
	}
	if done, waiting := r.rolledOutTo(s, running); !done {
		s.progressing(reason, fmt.Sprintf("moving to mutual TLS: the members roll to %s (%s)", what, waiting))
		return proceed, nil
	}
	if err := r.recordTLSMode(ctx, s, next, ""); err != nil {
		return proceed, err
	}
	if next == dbv1.TLSModeMutual {
		r.event(c, corev1.EventTypeNormal, ReasonTLSModeChosen, "ResolveTLS", "members speak %s: %s", next,
			tlsModeMessage(c, next, ""))
		return proceed, nil
	}
	msg := "every member takes TLS: the members roll again to require it"
	r.event(c, corev1.EventTypeNormal, ReasonTLSTransitionRequireTLS, "TLSTransition", "%s", msg)
	s.progressing(ReasonTLSTransitionRequireTLS, msg)
	return stopFor(time.Second), nil // the StatefulSet step writes the new flags on the next pass
}

// rolledOutTo says whether every member runs the StatefulSet's current
// revision, whose flags are of TLS mode `running`, and is Ready (its pod,
// and rolisd answering the operator); else what it waits for.
func (r *Reconciler) rolledOutTo(s *state, running string) (bool, string) {
	sts := s.sts
	if sts == nil || runningTLSMode(sts) != running {
		return false, "the StatefulSet does not have the flags yet"
	}
	if sts.Status.UpdateRevision == "" || sts.Status.ObservedGeneration < sts.Generation {
		return false, "the StatefulSet controller has not observed them yet"
	}
	ids := specs.MemberIDs(s.replicas)
	done := 0
	for _, id := range ids {
		p := s.pods[id]
		m := s.member(id)
		if p != nil && !podOutdated(sts, p) && podReady(p) && m != nil && m.Ready && m.Reachable() {
			done++
		}
	}
	if done < len(ids) {
		return false, fmt.Sprintf("%d of %d members on the new revision and Ready", done, len(ids))
	}
	return true, ""
}
