/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Day-2 operations a user asks for on a RolisCluster (docs/operations.md,
// "Day 2"): a planned switchover, fencing a member, a rolling restart.
//
// The switchover and the restarts are requests, not state: they are
// annotations that the operator acts on (and, for the one-shot ones,
// clears). A spec.leader field would be a standing order that fights every
// failover: after the operator replaced a failed leader, the spec would
// name a member that no longer leads and the operator would move
// leadership back as soon as it could, a second outage nobody asked for.
// Fencing is state (a member stays fenced until unfenced), so it is a spec
// field.
const (
	// AnnotationPromote asks for a planned switchover to the member it
	// names (its pod name, e.g. "db-2", or its id, "2"). The operator
	// promotes it through the failover protocol with it as the candidate,
	// records the switchover in status.lastSwitchover and an event, and
	// removes the annotation; a request it cannot honour (no such member,
	// a fenced one, not eligible) is removed with a Warning event saying
	// why.
	AnnotationPromote = "rolis.io/promote"
	// AnnotationRestartedAt asks for a rolling restart of every member
	// (like `kubectl rollout restart`): the operator copies it into the pod
	// template, so the pods run an older revision and the rollout restarts
	// them the safe way: followers one at a time, then a switchover, then
	// the old leader. Any new value restarts again.
	AnnotationRestartedAt = "rolis.io/restartedAt"
	// AnnotationRestartMember asks for the restart of one member (pod name
	// or id): a follower's pod is deleted once the cluster is settled; the
	// leader is first switched over. The operator removes the annotation
	// when it deletes the pod.
	AnnotationRestartMember = "rolis.io/restartMember"
)

// ConditionFenced is True while members are fenced (out of the voting
// configuration); the message lists them.
const ConditionFenced = "Fenced"

// SwitchoverRecord is a planned switchover the operator made.
type SwitchoverRecord struct {
	// From is the pod that led before.
	From string `json:"from"`
	// To is the pod that leads after.
	To string `json:"to"`
	// Epoch the new leader opened.
	Epoch int64 `json:"epoch"`
	// Time the new leader opened its epoch.
	Time metav1.Time `json:"time"`
	// Reason: Requested (the promote annotation), Restart (a restart of the
	// leader).
	// +optional
	Reason string `json:"reason,omitempty"`
}
