/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reasons of a Degraded condition about a member pod (docs/operator.md,
// "Status"): what the kubelet or the scheduler reports that keeps a member
// from running.
const (
	ReasonPodCrashLooping     = "PodCrashLooping"
	ReasonPodOOMKilled        = "PodOOMKilled"
	ReasonImagePullFailed     = "ImagePullFailed"
	ReasonContainerNotCreated = "ContainerNotCreated"
	ReasonPodUnschedulable    = "PodUnschedulable"
	ReasonVolumeNotBound      = "VolumeNotBound"
)

const (
	// pendingGrace is how long a pod may stay unscheduled before it is a
	// problem: a volume provisioned with Immediate binding makes the
	// scheduler refuse a new pod for a moment.
	pendingGrace = 30 * time.Second
	// recentOOM is how long an OOM kill stays a problem once the container
	// runs again: the next one is likely, and the limit needs a look.
	recentOOM = 10 * time.Minute
	// restartWindow: a container that restarted at least twice, the last
	// time within this window, and is not ready yet is still crash-looping
	// (the kubelet shows it running for a moment between back-offs).
	restartWindow = time.Minute
	// maxTerminationMessage bounds the container's termination message
	// quoted in a condition and an event (an event's note is at most 1 kB).
	maxTerminationMessage = 400
)

// podProblem is one member pod that cannot run, as a Degraded finding.
type podProblem struct {
	pod     string
	reason  string
	message string
	// key identifies the state for deduplicating events: the message
	// without what changes at every crash (the restart count).
	key string
}

// podProblems lists what keeps member pods from running, from their
// status alone (a pure function; pods being deleted are skipped): a
// container in CrashLoopBackOff, OOM-killed (now or within recentOOM),
// failing to pull its image or to be created, and a pod the scheduler has
// not placed for pendingGrace. At most one problem per pod, in pod name
// order; an OOM kill wins over the crash loop it causes.
func podProblems(pods []*corev1.Pod, now time.Time) []podProblem {
	sorted := append([]*corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var out []podProblem
	for _, p := range sorted {
		if p == nil || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if pr, ok := containerProblem(p, now); ok {
			out = append(out, pr)
		} else if pr, ok := schedulingProblem(p, now); ok {
			out = append(out, pr)
		}
	}
	return out
}

func containerProblem(p *corev1.Pod, now time.Time) (podProblem, bool) {
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		last := cs.LastTerminationState.Terminated
		// problem says what and adds the detail (the last exit, the
		// kubelet's message) to the message; the key, which decides whether
		// this is a new state, leaves out the restart count and the details
		// the kubelet varies while the state stays the same.
		problem := func(reason, what, detail string, detailIsState bool) (podProblem, bool) {
			key := fmt.Sprintf("%s pod %s: container %s %s", reason, p.Name, cs.Name, what)
			msg := fmt.Sprintf("pod %s: container %s %s (%d restarts)", p.Name, cs.Name, what, cs.RestartCount)
			if detail != "" {
				msg += "; " + detail
				if detailIsState {
					key += "; " + detail
				}
			}
			return podProblem{pod: p.Name, reason: reason, message: msg, key: key}, true
		}
		switch w, t := cs.State.Waiting, cs.State.Terminated; {
		case t != nil && t.Reason == "OOMKilled":
			return problem(ReasonPodOOMKilled, "was OOM-killed", "", false)
		case w != nil && w.Reason == "CrashLoopBackOff" && last != nil && last.Reason == "OOMKilled":
			return problem(ReasonPodOOMKilled, "is crash-looping after OOM kills (raise resources.limits.memory)", "", false)
		case w != nil && w.Reason == "CrashLoopBackOff":
			return problem(ReasonPodCrashLooping, "is crash-looping", describeTermination(last), true)
		case w == nil && !cs.Ready && cs.RestartCount >= 2 && last != nil && last.Reason != "OOMKilled" &&
			now.Sub(last.FinishedAt.Time) < restartWindow:
			return problem(ReasonPodCrashLooping, "is crash-looping", describeTermination(last), true)
		case w != nil && isImagePullFailure(w.Reason):
			// ErrImagePull and ImagePullBackOff alternate: one state.
			return problem(ReasonImagePullFailed, "cannot pull image "+imageOf(p, cs), w.Reason+": "+oneLine(w.Message), false)
		case w != nil && isCreateFailure(w.Reason):
			return problem(ReasonContainerNotCreated, fmt.Sprintf("cannot be created (%s)", w.Reason), oneLine(w.Message), true)
		case cs.State.Running != nil && last != nil && last.Reason == "OOMKilled" && now.Sub(last.FinishedAt.Time) < recentOOM:
			return problem(ReasonPodOOMKilled, fmt.Sprintf("was OOM-killed at %s (raise resources.limits.memory)",
				last.FinishedAt.UTC().Format(time.RFC3339)), "", true)
		}
	}
	return podProblem{}, false
}

func schedulingProblem(p *corev1.Pod, now time.Time) (podProblem, bool) {
	if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
		return podProblem{}, false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type != corev1.PodScheduled || cond.Status != corev1.ConditionFalse {
			continue
		}
		since := cond.LastTransitionTime.Time
		if since.IsZero() {
			since = p.CreationTimestamp.Time
		}
		if now.Sub(since) < pendingGrace {
			return podProblem{}, false
		}
		reason, what := ReasonPodUnschedulable, "cannot be scheduled"
		if mentionsVolumeBinding(cond.Message) {
			reason, what = ReasonVolumeNotBound, "waits for its volume"
		}
		msg := fmt.Sprintf("pod %s %s: %s", p.Name, what, oneLine(cond.Message))
		if cond.Message == "" {
			msg = fmt.Sprintf("pod %s %s (%s)", p.Name, what, cond.Reason)
		}
		return podProblem{pod: p.Name, reason: reason, message: msg, key: msg}, true
	}
	return podProblem{}, false
}

// mentionsVolumeBinding tells the scheduler's volume messages ("pod has
// unbound immediate PersistentVolumeClaims", "running PreBind plugin
// \"VolumeBinding\": ...", "persistentvolumeclaim \"data-db-1\" not found")
// from the others.
func mentionsVolumeBinding(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "persistentvolumeclaim") || strings.Contains(m, "volumebinding") || strings.Contains(m, "bind volume")
}

func isImagePullFailure(reason string) bool {
	switch reason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
		return true
	}
	return false
}

func isCreateFailure(reason string) bool {
	switch reason {
	case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
		return true
	}
	return false
}

func imageOf(p *corev1.Pod, cs corev1.ContainerStatus) string {
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		if c.Name == cs.Name && c.Image != "" {
			return c.Image
		}
	}
	return cs.Image
}

// describeTermination says how a container last ended: exit code, reason
// and the tail of its termination message (the pod template's
// FallbackToLogsOnError makes that the last lines of rolisd's log).
func describeTermination(t *corev1.ContainerStateTerminated) string {
	if t == nil {
		return ""
	}
	s := fmt.Sprintf("last exit code %d", t.ExitCode)
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	if m := oneLine(t.Message); m != "" {
		s += ": " + m
	}
	return s
}

// oneLine joins a multi-line message into one line and keeps its end (the
// last lines of a log say why a process stopped).
func oneLine(msg string) string {
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	s := strings.Join(lines, " | ")
	if len(s) > maxTerminationMessage {
		cut := len(s) - maxTerminationMessage
		for cut < len(s) && (s[cut]&0xC0) == 0x80 { // not inside a UTF-8 sequence
			cut++
		}
		s = "..." + s[cut:]
	}
	return s
}
