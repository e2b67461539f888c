/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// finding is a reason and a message for a condition.
type finding struct {
	reason  string
	message string
}

// state is what the steps of one reconcile learn and hand to each other.
type state struct {
	cluster  *dbv1.RolisCluster
	original *dbv1.RolisCluster
	mem      *memory

	configHash string
	// replicas is the StatefulSet's replica count: the desired count at
	// creation, afterwards moved only by the membership step.
	replicas int32
	sts      *appsv1.StatefulSet
	pods     map[int32]*corev1.Pod

	probed     bool
	members    []leadership.Member
	targets    []leadership.Target
	stored     leadership.Stored
	assessment leadership.Assessment
	// leaderID is the id of the decided leader, -1 without one.
	leaderID int32
	// seen is the latest decided watermark known (the record's or the
	// serving leader's), dataLoss what the members say against it
	// (checkDataLoss); a loss stops every promotion.
	seen     *rolisv1.LogKey
	dataLoss leadership.DataLoss
	// fence is spec.fencedMembers against the configuration (checkFencing).
	fence fence

	// Findings of the steps, turned into conditions by the status step.
	problems    []finding // Degraded
	progress    []finding // Progressing
	failingOver *finding  // FailingOver (nil: not failing over)
	extra       map[string]conditionValue
	// tlsIssueFirst: plaintext members are to move to TLS; their
	// certificates are issued before anything else changes (step_tls.go).
	tlsIssueFirst bool
}

type conditionValue struct {
	ok bool
	finding
}

func newState(c *dbv1.RolisCluster, mem *memory) *state {
	return &state{
		cluster:  c,
		original: c.DeepCopy(),
		mem:      mem,
		leaderID: -1,
		pods:     map[int32]*corev1.Pod{},
		extra:    map[string]conditionValue{},
	}
}

// problem records something that needs attention (Degraded).
func (s *state) problem(reason, message string) {
	s.problems = append(s.problems, finding{reason, message})
}

// progressing records work in progress (Progressing).
func (s *state) progressing(reason, message string) {
	s.progress = append(s.progress, finding{reason, message})
}

// condition sets an extra condition of a concern (CertificatesReady,
// MonitoringReady).
func (s *state) condition(t string, ok bool, reason, message string) {
	s.extra[t] = conditionValue{ok: ok, finding: finding{reason, message}}
}

func (s *state) member(id int32) *leadership.Member {
	for i := range s.members {
		if s.members[i].ID == id {
			return &s.members[i]
		}
	}
	return nil
}

func (s *state) target(id int32) leadership.Target {
	for _, t := range s.targets {
		if t.ID == id {
			return t
		}
	}
	return leadership.Target{Cluster: s.cluster, ID: id}
}
