/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// Reasons of leadership conditions and events.
const (
	ReasonLeaderServing       = "LeaderServing"
	ReasonNoLeader            = "NoLeader"
	ReasonLeaderOpening       = "LeaderOpening"
	ReasonLeaderUnhealthy     = "LeaderUnhealthy"
	ReasonLeaderGone          = "LeaderGone"
	ReasonLeaderLeaving       = "LeaderLeaving"
	ReasonElecting            = "Electing"
	ReasonPromoting           = "Promoting"
	ReasonPromoted            = "Promoted"
	ReasonPromotionFailed     = "PromotionFailed"
	ReasonFailoverUnsupported = "FailoverUnsupported"
	ReasonSuperseded          = "Superseded"
	ReasonNoQuorum            = "NoQuorum"
	ReasonNoCandidate         = "NoCandidate"
	ReasonWaitingForLease     = "WaitingForLease"
	ReasonEpochRecordLost     = "EpochRecordLost"
	ReasonLeaderLabelMoved    = "LeaderLabelMoved"
	ReasonConfiguration       = "ConfigurationRecorded"

	// maxPromotionBackoff bounds the wait between failed promotions.
	maxPromotionBackoff = 2 * time.Minute
	promotionLeaseTTL   = 30 * time.Second
)

func (r *Reconciler) epochStore(c *dbv1.RolisCluster) *leadership.ConfigMapStore {
	return &leadership.ConfigMapStore{
		Reader: r.APIReader, Writer: r.Client,
		Key: types.NamespacedName{Namespace: c.Namespace, Name: specs.EpochConfigMapName(c)},
	}
}

func (r *Reconciler) driver(c *dbv1.RolisCluster) *leadership.Driver {
	return &leadership.Driver{
		Dialer:   r.Dialer,
		Store:    r.epochStore(c),
		Timeouts: r.Timeouts,
		Observer: leadership.ObserverFunc(func(step leadership.Step, format string, args ...any) {
			r.event(c, corev1.EventTypeNormal, "Failover"+string(step), string(step), format, args...)
		}),
		ClientAddress: func(id int32) string {
			return fmt.Sprintf("%s:%d", specs.PeerHost(c, id, r.Options), specs.ClientPort)
		},
	}
}

func (r *Reconciler) event(c *dbv1.RolisCluster, kind, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(c, nil, kind, reason, action, format, args...)
	}
}

// reconcileLeadership keeps one serving leader per decided epoch.
//
//   - No epoch decided yet (a new cluster): once a majority answers, elect
//     the most advanced member through the failover protocol (epoch 1).
//   - The decided leader serves: make sure the role=leader label is on its
//     pod only and that every member knows the decision.
//   - The decided leader promised but did not open (the operator stopped
//     mid-promotion): finish with OpenEpoch of the same record.
//   - The decided leader is gone (its pod is deleted or being deleted, the
//     kubelet reports its container stopped or restarted, nothing listens
//     on its admin port): promote at once; with a pod being deleted this
//     is a planned switchover while the old process runs out its shutdown
//     grace. Waiting cannot bring that process back.
//   - The decided leader is unhealthy otherwise (it does not answer, or
//     answers but does not lead): wait failover.timeout from the first
//     time it was seen so (a blip or a pause is not a failover), then
//     promote the most advanced member to a new epoch.
//
// Either way the promotion is the whole protocol, so a leader wrongly
// taken for dead is fenced by the new epoch, never trusted to stop.
func (r *Reconciler) reconcileLeadership(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	stored, err := r.epochStore(c).Load(ctx)
	if err != nil {
		return proceed, err
	}
	s.stored = stored
	rec := stored.Record
	r.checkDataLoss(ctx, s)
	s.assessment = leadership.AssessLeader(s.members, rec)
	if s.assessment.State == leadership.Unhealthy && !s.assessment.Gone && s.mem.leaderUnhealthySince.IsZero() {
		r.confirmSuspicion(ctx, s, rec)
	}
	c.Status.Epoch = int64(rec.GetEpoch())
	if rec.GetEpoch() > 0 {
		s.leaderID = int32(rec.GetLeaderId())
		c.Status.Leader = specs.PodName(c, s.leaderID)
	} else {
		c.Status.Leader = ""
	}

	switch s.assessment.State {
	case leadership.Serving:
		s.mem.settleLeaderChange(c, rec.GetEpoch(), r.now())
		s.mem.leaderUnhealthySince, s.mem.leaderGone = time.Time{}, false
		s.mem.promotion.reset()
		s.mem.serving = incarnation{id: s.leaderID, epoch: rec.GetEpoch(),
			container: s.assessment.Leader.Container, uptime: s.assessment.Leader.Status.GetUptimeSeconds()}
		r.beats.watch(client.ObjectKeyFromObject(c), s.target(s.leaderID), rec.GetEpoch(), heartbeatInterval(c))
		c.Status.Watermark = logKey(s.assessment.Leader.Status.GetWatermark())
		if err := r.recordConfiguration(ctx, s); err != nil {
			return proceed, err
		}
		rec = s.stored.Record
		if err := r.moveLeaderLabel(ctx, s, s.leaderID); err != nil {
			return proceed, err
		}
		if lag := leadership.Lagging(s.members, rec); len(lag) > 0 {
			targets := make([]leadership.Target, 0, len(lag))
			for _, m := range lag {
				if s.fencedOut(m.ID) {
					continue // no longer sent to, so it never catches up
				}
				targets = append(targets, s.target(m.ID))
			}
			// Quietly: a member that keeps missing the news would otherwise
			// make an event at every probe.
			quiet := r.driver(c)
			quiet.Observer = nil
			if errs := quiet.Announce(ctx, targets, s.members, rec); len(errs) > 0 {
				log.FromContext(ctx).V(1).Info("members did not take the announcement", "errors", errors.Join(errs...).Error())
			}
		}
		return proceed, nil

	case leadership.Opening:
		return r.resume(ctx, s)

	case leadership.NoLeader:
		for i := range s.members {
			if d := s.members[i].Status.GetDecided().GetEpoch(); d > 0 {
				// The store lost its record (someone deleted the ConfigMap):
				// electing from an empty record could void what epoch d decided.
				msg := fmt.Sprintf("the epoch record %s is empty but %s knows decided epoch %d: restore the record (see docs/operator.md) before any election",
					specs.EpochConfigMapName(c), s.members[i].Pod, d)
				s.problem(ReasonEpochRecordLost, msg)
				return stopFor(retryMissingDependency), nil
			}
		}
		s.progressing(ReasonElecting, "electing the first leader")
		return r.promote(ctx, s, nil, "initial election")

	default: // Unhealthy
		now := r.now()
		if why := restarted(s); why != "" && !s.assessment.Gone {
			s.assessment.Gone, s.assessment.Reason = true, why
		}
		if s.assessment.Gone {
			if !s.mem.leaderGone {
				s.mem.leaderGone = true
				reason, what := ReasonLeaderGone, "failing over now"
				if s.assessment.Leaving {
					reason, what = ReasonLeaderLeaving, "switching over now"
				}
				r.event(c, corev1.EventTypeWarning, reason, "Detect", "%s: %s, without waiting failover.timeout", s.assessment.Reason, what)
			}
			if s.mem.leaderUnhealthySince.IsZero() {
				s.mem.leaderUnhealthySince = now
			}
			change := ChangeLeaderGone
			if s.assessment.Leaving {
				change = ChangeLeaderLeaving
			}
			s.mem.noteLeaderChange(change, s.mem.leaderUnhealthySince, rec.GetEpoch())
			return r.promote(ctx, s, map[int32]bool{s.leaderID: true}, s.assessment.Reason)
		}
		if s.mem.leaderUnhealthySince.IsZero() {
			// Counting from the first failed heartbeat is safe: it proves
			// the leader was silent from then (heartbeat.failingSince).
			s.mem.leaderUnhealthySince = now
			if hb := r.beats.failingSince(client.ObjectKeyFromObject(c), s.leaderID, rec.GetEpoch()); !hb.IsZero() && hb.Before(now) {
				s.mem.leaderUnhealthySince = hb
			}
			r.event(c, corev1.EventTypeWarning, ReasonLeaderUnhealthy, "Detect",
				"%s; failing over if it does not recover within %s", s.assessment.Reason, c.FailoverTimeout())
		}
		waited := now.Sub(s.mem.leaderUnhealthySince)
		if waited < c.FailoverTimeout() {
			s.failingOver = &finding{ReasonLeaderUnhealthy,
				fmt.Sprintf("%s; failing over if it does not recover within %s", s.assessment.Reason, c.FailoverTimeout())}
			// Look again soon: a leader that turns out gone (a refused
			// connection, a pod event) is failed over at once, and one
			// that recovers is seen serving again.
			return stopFor(min(c.FailoverTimeout()-waited, heartbeatInterval(c))), nil
		}
		s.mem.noteLeaderChange(ChangeLeaderUnhealthy, s.mem.leaderUnhealthySince, rec.GetEpoch())
		return r.promote(ctx, s, map[int32]bool{s.leaderID: true}, s.assessment.Reason)
	}
}

// confirmSuspicion looks at the leader once more before the operator first
// calls it unhealthy (a LeaderUnhealthy warning, and failover.timeout
// counting). One probe says little on a loaded node: it dials a new
// connection and gets Timeouts.Probe for that and the call, and the
// leader's answer may be late while the leader serves. And a pod deletion
// stops rolisd's admin API at once (the kubelet's SIGTERM), so a reconcile
// that listed the pods just before it would take the planned switchover
// for a suspicion. So: probe the leader again, then read its pod around
// the informer cache. This delays nothing that counts: the wait is timed
// from the heartbeat's first failure when that is earlier.
func (r *Reconciler) confirmSuspicion(ctx context.Context, s *state, rec *rolisv1.EpochRecord) {
	l := s.assessment.Leader
	if l == nil {
		return
	}
	r.reprobe(ctx, s, l)
	r.rereadPod(ctx, s, l)
	s.assessment = leadership.AssessLeader(s.members, rec)
}

// reprobe asks member m for its Status again and updates its entry in the
// cluster's status.
func (r *Reconciler) reprobe(ctx context.Context, s *state, m *leadership.Member) {
	t := s.target(m.ID)
	if t.Pod == nil {
		return
	}
	again := *m
	again.Status, again.Err = nil, nil
	*m = leadership.Probe(ctx, r.Dialer, []leadership.Target{t}, []leadership.Member{again}, r.Timeouts)[0]
	for i := range s.cluster.Status.Members {
		if s.cluster.Status.Members[i].ID == m.ID {
			s.cluster.Status.Members[i] = statusOfMember(m)
		}
	}
}

// rereadPod reads member m's pod from the API server, not the cache.
func (r *Reconciler) rereadPod(ctx context.Context, s *state, m *leadership.Member) {
	if r.APIReader == nil {
		return
	}
	p := &corev1.Pod{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.cluster.Namespace, Name: m.Pod}, p)
	switch {
	case apierrors.IsNotFound(err):
		m.PodExists, m.Deleting = false, false
	case err == nil:
		m.Deleting = !p.DeletionTimestamp.IsZero()
	} // on another error the cached pod stands
}

// restarted says why the decided leader's process is not the one that led
// its epoch ("" when nothing says so): the kubelet reports another
// container, or the member answers with a smaller uptime. A restarted
// rolisd starts as a member that catches up; it never leads the old epoch
// again.
func restarted(s *state) string {
	l, was := s.assessment.Leader, s.mem.serving
	if l == nil || was.id != l.ID || was.epoch != s.stored.Record.GetEpoch() {
		return ""
	}
	switch {
	case l.Container != "" && was.container != "" && l.Container != was.container:
		return fmt.Sprintf("leader %s restarted (container %s, was %s)", l.Pod, l.Container, was.container)
	case l.Reachable() && l.Status.GetUptimeSeconds() < was.uptime:
		return fmt.Sprintf("leader %s restarted (up %d s, was up %d s)", l.Pod, l.Status.GetUptimeSeconds(), was.uptime)
	}
	return ""
}

// recordConfiguration keeps the stored record in step with membership
// changes. The leader decides a change itself, on rolisd's control stream,
// as a record of its epoch with the next configuration (docs/replication.md,
// "Membership"); when the serving leader reports such a successor of the
// stored record, the store takes it (compare-and-set), so that the record
// the next failover starts from names the members in force. rolisd would
// also find the newer configuration in the Prepare quorum; the store should
// not lag behind what it says it holds.
func (r *Reconciler) recordConfiguration(ctx context.Context, s *state) error {
	c, rec := s.cluster, s.stored.Record
	dec := s.assessment.Leader.Status.GetDecided()
	if dec.GetEpoch() != rec.GetEpoch() || dec.GetLeaderId() != rec.GetLeaderId() || !leadership.NewerRecord(dec, rec) {
		return nil
	}
	stored, err := r.epochStore(c).CompareAndSwap(ctx, s.stored.Version, dec)
	if errors.Is(err, leadership.ErrSuperseded) {
		return nil // written since it was read: the next pass looks again
	}
	if err != nil {
		return err
	}
	s.stored = stored
	r.event(c, corev1.EventTypeNormal, ReasonConfiguration, "Record", "configuration %d of epoch %d recorded: members %v",
		dec.GetConfig(), dec.GetEpoch(), leadership.MemberIDs(dec.GetMembers()))
	return nil
}

// promote runs one promotion: choose the candidate, take the Lease, drive
// the protocol, move the label. A failed attempt is retried with an
// exponential backoff (from failover.timeout up to two minutes), so a
// cluster whose members cannot fail over (an image without the replication
// layer answers UNIMPLEMENTED) costs one attempt per backoff, not a loop.
func (r *Reconciler) promote(ctx context.Context, s *state, exclude map[int32]bool, why string) (outcome, error) {
	c := s.cluster
	logger := log.FromContext(ctx)
	failover := s.stored.Record.GetEpoch() > 0
	wait := func(reason, msg string) {
		if failover {
			s.failingOver = &finding{reason, msg}
		} else {
			s.progressing(reason, msg)
		}
	}

	now, b := r.now(), &s.mem.promotion
	if now.Before(b.notBefore) {
		s.problem(b.reason, b.message)
		wait(b.reason, b.message)
		return stopFor(b.notBefore.Sub(now)), nil
	}

	if s.dataLoss.Lost {
		// checkDataLoss made the condition, the event and the log line.
		return stopFor(probeInterval(c)), nil
	}

	reachable, need := leadership.CountReachable(s.members), leadership.Majority(len(s.members))
	if reachable < need {
		msg := fmt.Sprintf("%d of %d members answer, a promotion needs a majority of %d", reachable, len(s.members), need)
		if failover {
			s.problem(ReasonNoQuorum, msg)
		}
		wait(ReasonNoQuorum, msg)
		return stopFor(retryInterval(c, failover)), nil
	}
	cand, err := leadership.ChooseCandidate(s.members, s.withFenced(exclude))
	if err != nil {
		s.problem(ReasonNoCandidate, err.Error())
		wait(ReasonNoCandidate, err.Error())
		return stopFor(retryInterval(c, failover)), nil
	}

	lease := &leadership.PromotionLease{
		Reader: r.APIReader, Writer: r.Client,
		Key:    types.NamespacedName{Namespace: c.Namespace, Name: specs.LeaseName(c)},
		Holder: r.Identity, Duration: promotionLeaseTTL, Now: r.Now,
	}
	if err := lease.Acquire(ctx); err != nil {
		if errors.Is(err, leadership.ErrLeaseHeld) {
			wait(ReasonWaitingForLease, err.Error())
			return stopFor(retryInterval(c, true)), nil
		}
		return proceed, err
	}
	defer func() {
		if err := lease.Release(context.WithoutCancel(ctx)); err != nil {
			logger.Error(err, "releasing the promotion lease")
		}
	}()

	r.warnIfBehindRecord(ctx, s, cand)

	epoch := leadership.NextEpoch(s.members, s.stored.Record)
	action := "election"
	if failover {
		action = "failover"
	}
	start := fmt.Sprintf("%s: promoting %s (epoch %d, watermark %s, decided epoch %d, %d slots) to epoch %d: %s",
		action, cand.Pod, cand.Status.GetEpoch(), keyString(cand.Status.GetWatermark()),
		cand.Status.GetDecided().GetEpoch(), leadership.SlotsHeld(cand), epoch, why)
	r.event(c, corev1.EventTypeNormal, ReasonPromoting, "Promote", "%s", start)
	wait(ReasonPromoting, start)
	if failover {
		// Say so before the first call: a promotion can take seconds.
		if err := r.updateStatus(ctx, s); err != nil {
			logger.Error(err, "recording FailingOver before the promotion")
		}
	}

	stored, err := r.driver(c).Promote(ctx, leadership.Promotion{
		Candidate: s.target(cand.ID), Members: s.members, Targets: s.targets, From: s.stored, Epoch: epoch,
		Opened: r.labelOnOpen(ctx, s, cand.ID),
	})
	if stored.Record != nil { // decided, even if the leader did not open yet
		s.stored = stored
		s.leaderID = int32(stored.Record.GetLeaderId())
		c.Status.Epoch = int64(stored.Record.GetEpoch())
		c.Status.Leader = specs.PodName(c, s.leaderID)
	}
	if err != nil {
		if stored.Record != nil && leadership.StillOpening(err) {
			return r.stillOpening(s, cand, err)
		}
		return r.promotionFailed(s, cand, err, wait)
	}

	s.mem.promotion.reset()
	s.mem.leaderUnhealthySince = time.Time{}
	if err := r.moveLeaderLabel(ctx, s, cand.ID); err != nil {
		return proceed, err
	}
	r.event(c, corev1.EventTypeNormal, ReasonPromoted, "Promote", "%s leads epoch %d", cand.Pod, stored.Record.GetEpoch())
	s.mem.settleLeaderChange(c, stored.Record.GetEpoch(), r.now())
	r.beats.watch(client.ObjectKeyFromObject(c), s.target(cand.ID), stored.Record.GetEpoch(), heartbeatInterval(c))
	s.failingOver = nil
	s.progress = nil
	s.assessment = leadership.Assessment{State: leadership.Serving, Leader: cand}
	c.Status.Watermark = logKey(stored.Record.GetWatermark())
	// Look again before acting on the new leader (membership, rollout).
	return stopFor(time.Second), nil
}

func (r *Reconciler) promotionFailed(s *state, cand *leadership.Member, err error, wait func(string, string)) (outcome, error) {
	c := s.cluster
	if errors.Is(err, leadership.ErrSuperseded) {
		// Another decision won the compare-and-set: not a fault, look again.
		msg := fmt.Sprintf("a newer epoch was decided while promoting %s; re-reading the record", cand.Pod)
		r.event(c, corev1.EventTypeNormal, ReasonSuperseded, "Decide", "%s", msg)
		wait(ReasonSuperseded, msg)
		return stopFor(time.Second), nil
	}
	reason := ReasonPromotionFailed
	msg := fmt.Sprintf("promotion of %s failed at %s", cand.Pod, err.Error())
	if leadership.Unimplemented(err) {
		reason = ReasonFailoverUnsupported
		msg = fmt.Sprintf("%s answered UNIMPLEMENTED to %s: this rolisd has no replication layer, so it cannot be elected leader; use an image with replication (the operator keeps retrying with backoff)",
			cand.Pod, leadership.FailedStep(err))
	}
	backoff := s.mem.promotion.fail(r.now(), c.FailoverTimeout(), reason, msg)
	r.event(c, corev1.EventTypeWarning, reason, "Promote", "%s; next attempt in %s", msg, backoff)
	s.problem(reason, msg)
	wait(reason, msg)
	return stopFor(backoff), nil
}

// stillOpening handles an OpenEpoch of a decided record that did not answer
// "open" in time: the candidate goes on opening (its re-proposals are not on
// a majority yet). That is not a failed promotion (no backoff): the record
// is final, so the next pass asks the same member to open the same record
// again, which waits for the opening (Opening, resume).
func (r *Reconciler) stillOpening(s *state, m *leadership.Member, err error) (outcome, error) {
	c := s.cluster
	msg := fmt.Sprintf("%s is still opening epoch %d (%s); asking again", m.Pod, s.stored.Record.GetEpoch(), err.Error())
	r.event(c, corev1.EventTypeNormal, ReasonLeaderOpening, "Open", "%s", msg)
	s.failingOver = &finding{ReasonLeaderOpening, msg}
	return stopFor(retryInterval(c, true)), nil
}

// resume finishes a decided promotion whose leader has not opened yet.
func (r *Reconciler) resume(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	leader := s.assessment.Leader
	s.failingOver = &finding{ReasonLeaderOpening, s.assessment.Reason}
	now, b := r.now(), &s.mem.promotion
	if now.Before(b.notBefore) {
		s.problem(b.reason, b.message)
		return stopFor(b.notBefore.Sub(now)), nil
	}
	r.event(c, corev1.EventTypeNormal, ReasonLeaderOpening, "Open", "%s", s.assessment.Reason)
	if err := r.driver(c).Resume(ctx, s.target(leader.ID), s.targets, s.members, s.stored.Record, r.labelOnOpen(ctx, s, leader.ID)); err != nil {
		if leadership.StillOpening(err) {
			return r.stillOpening(s, leader, err)
		}
		return r.promotionFailed(s, leader, err, func(reason, msg string) { s.failingOver = &finding{reason, msg} })
	}
	s.mem.promotion.reset()
	if err := r.moveLeaderLabel(ctx, s, leader.ID); err != nil {
		return proceed, err
	}
	r.event(c, corev1.EventTypeNormal, ReasonPromoted, "Open", "%s leads epoch %d", leader.Pod, s.stored.Record.GetEpoch())
	s.mem.settleLeaderChange(c, s.stored.Record.GetEpoch(), r.now())
	s.failingOver = nil
	return stopFor(time.Second), nil
}

// retryInterval is the delay before looking again at a promotion that
// cannot start yet: short while a failover is in progress (every moment
// counts and the heartbeat's pace is cheap), the probe pace otherwise.
func retryInterval(c *dbv1.RolisCluster, failover bool) time.Duration {
	if failover {
		return heartbeatInterval(c)
	}
	return probeInterval(c)
}

// labelOnOpen moves the role=leader label as soon as the new leader is open,
// before the announcements (the Service follows the label); a failure here
// is retried by the caller's moveLeaderLabel.
func (r *Reconciler) labelOnOpen(ctx context.Context, s *state, id int32) func() {
	return func() {
		if err := r.moveLeaderLabel(ctx, s, id); err != nil {
			log.FromContext(ctx).V(1).Info("moving the leader label right after opening", "error", err.Error())
		}
	}
}

// moveLeaderLabel puts role=leader on the leader's pod and role=follower on
// every other member (role=fenced on a fenced member out of the
// configuration): followers first, so that two pods never carry the
// leader label at once (for a moment none does). Clients of a deposed
// leader that still reach it are refused by the epoch fence, not by the
// label. In the same patch it keeps the serving label (the read Service's
// selector): "false" on a member spec.fencedMembers fences, from the
// moment the fence is accepted, "true" on every other.
func (r *Reconciler) moveLeaderLabel(ctx context.Context, s *state, leaderID int32) error {
	var leaderPod *corev1.Pod
	for id, p := range s.pods {
		if id == leaderID {
			leaderPod = p
			continue
		}
		role := specs.RoleFollower
		if s.fencedOut(id) {
			role = specs.RoleFenced
		}
		if err := r.setLabels(ctx, p, role, !s.fence.fenced[id]); err != nil {
			return err
		}
	}
	if leaderPod == nil {
		return nil
	}
	if leaderPod.Labels[specs.LabelRole] != specs.RoleLeader {
		r.event(s.cluster, corev1.EventTypeNormal, ReasonLeaderLabelMoved, "Label",
			"%s=%s moved to %s", specs.LabelRole, specs.RoleLeader, leaderPod.Name)
	}
	return r.setLabels(ctx, leaderPod, specs.RoleLeader, true)
}

func logKey(k *rolisv1.LogKey) *dbv1.LogKey {
	if k == nil {
		return nil
	}
	return &dbv1.LogKey{Epoch: int64(k.GetEpoch()), TS: int64(k.GetTs())}
}

func keyString(k *rolisv1.LogKey) string {
	return fmt.Sprintf("(%d,%d)", k.GetEpoch(), k.GetTs())
}
