/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// Step names one step of a promotion; events and conditions name it.
type Step string

// The steps of a promotion, in order (DESIGN.md, "Epochs and failover").
const (
	StepPrepare  Step = "Prepare"
	StepDecide   Step = "Decide"
	StepOpen     Step = "Open"
	StepAnnounce Step = "Announce"
)

// StepError is a failed step.
type StepError struct {
	Step   Step
	Member string
	Err    error
}

func (e *StepError) Error() string {
	if e.Member != "" {
		return fmt.Sprintf("%s on %s: %s", e.Step, e.Member, ShortError(e.Err))
	}
	return fmt.Sprintf("%s: %s", e.Step, ShortError(e.Err))
}

func (e *StepError) Unwrap() error { return e.Err }

// FailedStep returns the step err comes from ("" if none).
func FailedStep(err error) Step {
	var se *StepError
	if errors.As(err, &se) {
		return se.Step
	}
	return ""
}

// Observer hears about each step of a promotion (the controller turns them
// into Kubernetes events).
type Observer interface {
	Stepped(step Step, format string, args ...any)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(step Step, format string, args ...any)

// Stepped implements Observer.
func (f ObserverFunc) Stepped(step Step, format string, args ...any) { f(step, format, args...) }

// Driver runs the failover protocol through the admin API and the epoch store.
type Driver struct {
	Dialer   Dialer
	Store    EpochStore
	Timeouts Timeouts
	Observer Observer
	// ClientAddress is the client address of a member, announced to the
	// others so they can redirect clients to the leader, when the members'
	// Status does not say where the leader serves clients.
	ClientAddress func(id int32) string
}

func (d *Driver) observe(step Step, format string, args ...any) {
	if d.Observer != nil {
		d.Observer.Stepped(step, format, args...)
	}
}

// Promotion is one attempt to open a new epoch with a candidate.
type Promotion struct {
	Candidate Target
	// Members are all members as last probed (the candidate among them).
	Members []Member
	Targets []Target
	// From is the latest decided record and the store version it was read at.
	From Stored
	// Epoch is the new epoch (NextEpoch of the probe and the record).
	Epoch uint64
	// Opened, when set, runs as soon as the candidate has opened, before
	// the announcements: the controller moves the role=leader label there,
	// so that the client Service follows the new leader without waiting
	// for members that are slow to answer.
	Opened func()
}

// Promote runs the protocol:
//
//  1. PrepareFailover(e', (e_c, V_c)) on the candidate. The candidate gathers
//     promises of e' and every slot from a majority across all streams,
//     merges, walks each stream under V_c and proposes (e', V', G').
//  2. Decide (e', V') by compare-and-set in the epoch store. If the store
//     moved since it was read, a newer decision won: give up. Nothing is
//     lost by giving up: the candidate has not opened, and the promises of
//     e' only fence older epochs.
//  3. OpenEpoch((e', V')) on the candidate: it re-proposes what it found,
//     fills holes with no-ops, puts a barrier on every stream and opens for
//     writes when all of that is on a majority.
//  4. AnnounceLeader to every reachable member (best effort; a member that
//     missed it is told again on a later pass).
//
// The record is decided before anyone opens it, so two candidates can never
// both open: only one compare-and-set on the same version succeeds, and an
// older epoch's leader is fenced by the promises of step 1.
func (d *Driver) Promote(ctx context.Context, p Promotion) (Stored, error) {
	cand := p.Candidate
	name := memberName(p.Members, cand.ID)

	c, err := d.Dialer.Dial(ctx, cand)
	if err != nil {
		return Stored{}, &StepError{Step: StepPrepare, Member: name, Err: err}
	}
	defer c.Close() //nolint:errcheck

	d.observe(StepPrepare, "PrepareFailover(epoch %d) on %s from decided epoch %d", p.Epoch, name, p.From.Record.GetEpoch())
	pctx, cancel := context.WithTimeout(ctx, d.Timeouts.Prepare)
	resp, err := c.PrepareFailover(pctx, &rolisv1.PrepareFailoverRequest{NewEpoch: p.Epoch, LastDecided: p.From.Record})
	cancel()
	if err != nil {
		return Stored{}, &StepError{Step: StepPrepare, Member: name, Err: err}
	}
	if resp.GetProposed() == nil {
		return Stored{}, &StepError{Step: StepPrepare, Member: name, Err: errors.New("candidate proposed no record")}
	}
	rec := proto.Clone(resp.GetProposed()).(*rolisv1.EpochRecord)
	if rec.GetEpoch() != p.Epoch {
		return Stored{}, &StepError{Step: StepPrepare, Member: name,
			Err: fmt.Errorf("candidate proposed epoch %d, asked for %d", rec.GetEpoch(), p.Epoch)}
	}
	if rec.LeaderId == 0 {
		rec.LeaderId = uint32(cand.ID)
	}
	if rec.GetLeaderId() != uint32(cand.ID) {
		return Stored{}, &StepError{Step: StepPrepare, Member: name,
			Err: fmt.Errorf("candidate proposed leader %d, expected itself (%d)", rec.GetLeaderId(), cand.ID)}
	}
	d.observe(StepPrepare, "%s proposed epoch %d with watermark (%d,%d), promised by %v",
		name, rec.GetEpoch(), rec.GetWatermark().GetEpoch(), rec.GetWatermark().GetTs(), resp.GetPromisedBy())

	stored, err := d.Store.CompareAndSwap(ctx, p.From.Version, rec)
	if err != nil {
		return Stored{}, &StepError{Step: StepDecide, Member: name, Err: err}
	}
	d.observe(StepDecide, "decided epoch %d with leader %s (compare-and-set at version %s)", rec.GetEpoch(), name, p.From.Version)

	if err := d.open(ctx, c, name, rec); err != nil {
		return stored, err
	}
	if p.Opened != nil {
		p.Opened()
	}
	d.Announce(ctx, Answering(p.Targets, p.Members), p.Members, rec)
	return stored, nil
}

// Answering keeps the targets whose member answered the last probe. A
// member that did not (the old leader, a pod whose address is gone) could
// hold an announcement for a whole call timeout; the controller tells it
// once it answers again (Lagging).
func Answering(targets []Target, members []Member) []Target {
	out := make([]Target, 0, len(targets))
	for _, t := range targets {
		if m := find(members, t.ID); m != nil && m.Reachable() {
			out = append(out, t)
		}
	}
	return out
}

// Resume finishes a promotion whose record is decided but whose leader has
// not opened it (the operator stopped in between): OpenEpoch of the same
// record, then the announcements.
func (d *Driver) Resume(ctx context.Context, leader Target, targets []Target, members []Member, rec *rolisv1.EpochRecord, opened func()) error {
	name := memberName(members, leader.ID)
	c, err := d.Dialer.Dial(ctx, leader)
	if err != nil {
		return &StepError{Step: StepOpen, Member: name, Err: err}
	}
	defer c.Close() //nolint:errcheck
	if err := d.open(ctx, c, name, rec); err != nil {
		return err
	}
	if opened != nil {
		opened()
	}
	d.Announce(ctx, Answering(targets, members), members, rec)
	return nil
}

func (d *Driver) open(ctx context.Context, c AdminClient, name string, rec *rolisv1.EpochRecord) error {
	d.observe(StepOpen, "OpenEpoch(%d) on %s", rec.GetEpoch(), name)
	octx, cancel := context.WithTimeout(ctx, d.Timeouts.Open)
	defer cancel()
	resp, err := c.OpenEpoch(octx, &rolisv1.OpenEpochRequest{Record: rec})
	if err != nil {
		return &StepError{Step: StepOpen, Member: name, Err: err}
	}
	d.observe(StepOpen, "%s opened epoch %d at watermark (%d,%d)", name, rec.GetEpoch(),
		resp.GetWatermark().GetEpoch(), resp.GetWatermark().GetTs())
	return nil
}

// Announce tells the given members the decided record and its leader. It
// returns the members that could not be told (they are told again later).
func (d *Driver) Announce(ctx context.Context, targets []Target, members []Member, rec *rolisv1.EpochRecord) []error {
	leaderAddr := AdvertisedClientAddress(members, int32(rec.GetLeaderId()))
	if leaderAddr == "" && d.ClientAddress != nil {
		leaderAddr = d.ClientAddress(int32(rec.GetLeaderId()))
	}
	// In parallel: one slow member must not hold up the others.
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for _, t := range targets {
		if t.Pod == nil {
			continue
		}
		wg.Add(1)
		go func(t Target) {
			defer wg.Done()
			err := func() error {
				c, err := d.Dialer.Dial(ctx, t)
				if err != nil {
					return err
				}
				defer c.Close() //nolint:errcheck
				actx, cancel := context.WithTimeout(ctx, d.Timeouts.Call)
				defer cancel()
				return c.AnnounceLeader(actx, &rolisv1.AnnounceLeaderRequest{Record: rec, LeaderClientAddress: leaderAddr})
			}()
			if err != nil {
				mu.Lock()
				errs = append(errs, &StepError{Step: StepAnnounce, Member: memberName(members, t.ID), Err: err})
				mu.Unlock()
			}
		}(t)
	}
	wg.Wait()
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	if len(errs) == 0 {
		d.observe(StepAnnounce, "announced epoch %d with leader %d to %d members", rec.GetEpoch(), rec.GetLeaderId(), len(targets))
	} else {
		d.observe(StepAnnounce, "announced epoch %d to %d of %d members: %v", rec.GetEpoch(), len(targets)-len(errs), len(targets), errors.Join(errs...))
	}
	return errs
}

func memberName(members []Member, id int32) string {
	for i := range members {
		if members[i].ID == id && members[i].Pod != "" {
			return members[i].Pod
		}
	}
	return fmt.Sprintf("member %d", id)
}
