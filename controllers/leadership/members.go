/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// Member is what one probe saw of one member.
type Member struct {
	ID  int32
	Pod string
	// PodExists is false when the StatefulSet has not (re)created the pod.
	PodExists bool
	// Deleting is true when the pod is being deleted.
	Deleting bool
	// Stopped says why the kubelet reports the member's rolisd container
	// as not running (terminated, or waiting to start again); "" when it
	// runs or the pod status does not say.
	Stopped string
	// Container is the kubelet's id of the running rolisd container: a new
	// id is a new process.
	Container string
	// Ready is the pod's Ready condition.
	Ready bool
	// Outdated is true when the pod runs an older StatefulSet revision.
	Outdated bool
	// Status is the member's answer; nil when it did not answer.
	Status *rolisv1.StatusResponse
	// Err says why there is no Status.
	Err error
}

// Reachable reports whether the member answered Status.
func (m *Member) Reachable() bool { return m.Err == nil && m.Status != nil }

// Healthy reports whether the member answered and says it is healthy.
func (m *Member) Healthy() bool { return m.Reachable() && m.Status.GetHealthy() }

// RoleName is the member's role for people ("Unreachable" when it did not answer).
func (m *Member) RoleName() string {
	if !m.Reachable() {
		return "Unreachable"
	}
	switch m.Status.GetRole() {
	case rolisv1.Role_LEADER:
		return "Leader"
	case rolisv1.Role_FOLLOWER:
		return "Follower"
	case rolisv1.Role_CANDIDATE:
		return "Candidate"
	case rolisv1.Role_CATCHING_UP:
		return "CatchingUp"
	case rolisv1.Role_STANDALONE:
		return "Standalone"
	default:
		return "Unknown"
	}
}

// Probe asks every target for its Status in parallel, each call bounded by
// timeout. It never fails as a whole: a member that does not answer is a
// Member with Err set.
func Probe(ctx context.Context, d Dialer, targets []Target, base []Member, timeout Timeouts) []Member {
	out := make([]Member, len(targets))
	copy(out, base)
	var wg sync.WaitGroup
	for i := range targets {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			m := &out[i]
			m.ID = targets[i].ID
			if targets[i].Pod == nil {
				m.Err = fmt.Errorf("pod does not exist")
				return
			}
			cctx, cancel := context.WithTimeout(ctx, timeout.Probe)
			defer cancel()
			c, err := d.Dial(cctx, targets[i])
			if err != nil {
				m.Err = err
				return
			}
			defer c.Close() //nolint:errcheck // nothing to do about a failed close
			st, err := c.Status(cctx)
			if err != nil {
				m.Err = err
				return
			}
			if st == nil {
				m.Err = errors.New("empty Status response")
				return
			}
			m.Status = st
		}(i)
	}
	wg.Wait()
	return out
}

// AdvertisedClientAddress is the client address member id advertises
// (rolisd's --advertise-address, or its listen address), as its own Status
// reports it, else as another member learned it; "" when no one says.
// Followers hand it to clients in redirects, so it must be the address the
// member really serves on: in Kubernetes its stable DNS name, in tests a
// loopback port.
func AdvertisedClientAddress(members []Member, id int32) string {
	find := func(m *Member) string {
		for _, e := range m.Status.GetMembers() {
			if e.GetId() == uint32(id) {
				return e.GetClientAddress()
			}
		}
		return ""
	}
	for i := range members {
		if members[i].ID == id && members[i].Reachable() {
			if a := find(&members[i]); a != "" {
				return a
			}
		}
	}
	for i := range members {
		if members[i].Reachable() {
			if a := find(&members[i]); a != "" {
				return a
			}
		}
	}
	return ""
}

// Refused reports whether err says that nothing listens at the member's
// address (TCP connection refused): the process is not running there. gRPC
// carries the dial error only as text in its status message, hence the
// string match (the text is Go's, "connect: connection refused").
func Refused(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	return strings.Contains(err.Error(), "connect: connection refused")
}

// Majority is the size of a majority of n members.
func Majority(n int) int { return n/2 + 1 }

// CountReachable counts members that answered.
func CountReachable(members []Member) int {
	n := 0
	for i := range members {
		if members[i].Reachable() {
			n++
		}
	}
	return n
}

// Unimplemented reports whether err is gRPC's UNIMPLEMENTED, which a rolisd
// without the replication layer answers to the failover calls.
func Unimplemented(err error) bool {
	var se *StepError
	if errors.As(err, &se) {
		err = se.Err
	}
	return status.Code(err) == codes.Unimplemented
}

// StillOpening reports whether err is an OpenEpoch that did not say "open"
// in time (UNAVAILABLE: the re-proposals are not on a majority yet; or the
// call's deadline): the candidate goes on opening, and asking it again to
// open the same record is safe (a decided record is final).
func StillOpening(err error) bool {
	if FailedStep(err) != StepOpen {
		return false
	}
	var se *StepError
	errors.As(err, &se)
	switch status.Code(se.Err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return !Refused(se.Err)
	}
	return errors.Is(se.Err, context.DeadlineExceeded)
}

// ShortError is the gRPC message of err without the code prefix noise, or
// err's text.
func ShortError(err error) string {
	if err == nil {
		return ""
	}
	if s, ok := status.FromError(err); ok {
		return fmt.Sprintf("%s: %s", s.Code(), s.Message())
	}
	return err.Error()
}
