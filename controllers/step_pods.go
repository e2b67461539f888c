/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// checkPods reports member pods that cannot run (podProblems: crash loops,
// OOM kills, image pulls, containers that cannot be created, pods the
// scheduler cannot place) as Degraded, and makes a Warning event naming the
// pod once per state: again only when the pod's problem changes, or after
// the pod was ready or gone in between. It never stops the reconcile: the
// other members may still serve, and leadership acts on the same pods.
func (r *Reconciler) checkPods(_ context.Context, s *state) (outcome, error) {
	pods := make([]*corev1.Pod, 0, len(s.pods))
	for _, p := range s.pods {
		pods = append(pods, p)
	}
	problems := podProblems(pods, r.now())
	if s.mem.podProblems == nil {
		s.mem.podProblems = map[string]string{}
	}
	reported := map[string]bool{}
	for _, pr := range problems {
		s.problem(pr.reason, pr.message)
		reported[pr.pod] = true
		if s.mem.podProblems[pr.pod] == pr.key {
			continue
		}
		s.mem.podProblems[pr.pod] = pr.key
		if p := podByName(pods, pr.pod); r.Recorder != nil && p != nil {
			r.Recorder.Eventf(s.cluster, p, corev1.EventTypeWarning, pr.reason, "CheckPods", "%s", pr.message)
		}
	}
	// Forget a pod's problem once it is ready or gone, so that the same
	// problem coming back is reported again.
	for name := range s.mem.podProblems {
		if reported[name] {
			continue
		}
		if p := podByName(pods, name); p == nil || podReady(p) {
			delete(s.mem.podProblems, name)
		}
	}
	return proceed, nil
}

func podByName(pods []*corev1.Pod, name string) *corev1.Pod {
	for _, p := range pods {
		if p.Name == name {
			return p
		}
	}
	return nil
}
