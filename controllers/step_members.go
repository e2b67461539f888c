/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
)

// probeMembers asks every member for its Status through the admin API. A
// member that does not answer is recorded with the reason; probing never
// fails the reconcile.
func (r *Reconciler) probeMembers(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	ids := specs.MemberIDs(s.replicas)
	base := make([]leadership.Member, len(ids))
	s.targets = make([]leadership.Target, len(ids))
	ready := int32(0)
	for i, id := range ids {
		p := s.pods[id]
		base[i] = leadership.Member{ID: id, Pod: specs.PodName(c, id)}
		s.targets[i] = leadership.Target{Cluster: c, ID: id, Pod: p}
		if p == nil {
			continue
		}
		base[i].PodExists = true
		base[i].Deleting = !p.DeletionTimestamp.IsZero()
		base[i].Ready = podReady(p)
		base[i].Outdated = podOutdated(s.sts, p)
		base[i].Stopped, base[i].Container = containerState(p)
		if base[i].Ready {
			ready++
		}
	}
	s.members = leadership.Probe(ctx, r.Dialer, s.targets, base, r.Timeouts)
	s.probed = true

	c.Status.ReadyReplicas = ready
	c.Status.Members = make([]dbv1.MemberStatus, 0, len(s.members))
	for i := range s.members {
		c.Status.Members = append(c.Status.Members, statusOfMember(&s.members[i]))
	}
	return proceed, nil
}

// statusOfMember is what the cluster's status says of a probed member.
func statusOfMember(m *leadership.Member) dbv1.MemberStatus {
	ms := dbv1.MemberStatus{Name: m.Pod, ID: m.ID, Role: m.RoleName(), Healthy: m.Healthy()}
	if m.Reachable() {
		ms.Epoch = int64(m.Status.GetEpoch())
		ms.Watermark = logKey(m.Status.GetWatermark())
		ms.Durability = m.Status.GetDurability()
		ms.Version = m.Status.GetVersion()
		if m.Status.GetDataLossSuspected() {
			ms.DataLossSuspected, ms.Message = true, m.Status.GetDataLossReason()
		}
	} else {
		ms.Message = leadership.ShortError(m.Err)
	}
	return ms
}

// containerState reads the kubelet's report of the rolisd container: why
// it is not running ("" when it runs or nothing is reported yet) and the id
// of the running container (a new id is a new process).
func containerState(p *corev1.Pod) (stopped, id string) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != specs.ContainerRun {
			continue
		}
		switch {
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			return fmt.Sprintf("container %s terminated (%s, exit code %d)", cs.Name, t.Reason, t.ExitCode), ""
		case cs.State.Waiting != nil:
			return fmt.Sprintf("container %s is not running (waiting: %s)", cs.Name, cs.State.Waiting.Reason), ""
		case cs.State.Running != nil:
			return "", cs.ContainerID
		}
	}
	return "", ""
}
