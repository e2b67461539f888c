/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

func eventsWith(events []string, reason string) []string {
	var out []string
	for _, ev := range events {
		if strings.Contains(ev, " "+reason+" ") {
			out = append(out, ev)
		}
	}
	return out
}

// The Kind run, as the operator sees it: a leader served epoch 1
// up to G = (1,900), then every member restarted without its state
// (memory durability) and answers at epoch 0, watermark (0,0). The
// operator must not found an empty database over the decided record: it
// reports DataLoss (and Degraded), one Warning event naming the members
// against the record, and promotes no one; once the data is back (a
// majority answers with the record's epoch), it clears and elects.
func TestAFullRestartThatLostTheStateIsReportedAndNotPromoted(t *testing.T) {
	g := NewWithT(t)
	e := servingCluster(t)
	e.dialer[1].status.Watermark = &rolisv1.LogKey{Epoch: 1, Ts: 900}
	_, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.condition(t, dbv1.ConditionAvailable).Reason).To(Equal(ReasonLeaderServing))
	g.Expect(e.condition(t, dbv1.ConditionDataLoss).Status).To(Equal(metav1.ConditionFalse))
	e.events()

	for id, a := range e.dialer {
		a.status = &rolisv1.StatusResponse{Id: uint32(id), Role: rolisv1.Role_FOLLOWER, Healthy: true,
			Watermark: &rolisv1.LogKey{}, Durability: "memory"}
	}
	e.dialer[1].statusErr = errors.New("connection error: desc = \"transport: Error while dialing: dial tcp 10.0.0.1:7001: connect: connection refused\"")
	for i := 0; i < 3; i++ {
		_, err = e.reconcile(t)
		g.Expect(err).NotTo(HaveOccurred())
	}
	for id, a := range e.dialer {
		g.Expect(a.calls["PrepareFailover"]).To(BeZero(), "member %d: promoting would serve an empty database", id)
	}
	dl := e.condition(t, dbv1.ConditionDataLoss)
	g.Expect(dl.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(dl.Reason).To(Equal(leadership.DataLossMajorityBehind))
	g.Expect(dl.Message).To(ContainSubstring("2 of 3 members answer with a state older than the decided record (epoch 1, leader 1, watermark (0,0), last seen watermark (1,900))"))
	g.Expect(dl.Message).To(ContainSubstring("db-2 (epoch 0, promised 0, decided 0, watermark (0,0))"))
	g.Expect(dl.Message).To(ContainSubstring("PVCs data-db-2, data-db-3"))
	g.Expect(dl.Message).To(ContainSubstring(`docs/operations.md, "Data loss under the operator"`))
	deg := e.condition(t, dbv1.ConditionDegraded)
	g.Expect(deg.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(deg.Reason).To(Equal(ReasonDataLossSuspected))
	cur := getUnitCluster(t, e)
	g.Expect(cur.Status.Phase).To(Equal(dbv1.PhaseDegraded))
	g.Expect(cur.Status.Members[1].Durability).To(Equal("memory"))
	g.Expect(cur.Status.Watermark).To(Equal(&dbv1.LogKey{Epoch: 1, TS: 900}), "the last G seen stays, so the next pass compares with it too")
	g.Expect(deg.Message).To(ContainSubstring("runs with durability memory while spec.durability is disk"), "every finding is in the message")

	evs := e.events()
	warn := eventsWith(evs, ReasonDataLossSuspected)
	g.Expect(warn).To(HaveLen(1), "one event per state, not one per reconcile: %v", evs)
	g.Expect(warn[0]).To(HavePrefix("Warning"))
	g.Expect(warn[0]).To(ContainSubstring("db-3 (epoch 0, promised 0, decided 0, watermark (0,0))"))
	g.Expect(eventsWith(evs, ReasonPromoting)).To(BeEmpty())

	// The volumes come back: members 2 and 3 answer with the promise and
	// the record they kept.
	for _, id := range []int32{2, 3} {
		st := e.dialer[id].status
		st.Epoch, st.PromisedEpoch, st.Watermark = 1, 1, &rolisv1.LogKey{Epoch: 1, Ts: 900}
		st.Decided = &rolisv1.EpochRecord{Epoch: 1, LeaderId: 1}
	}
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.condition(t, dbv1.ConditionDataLoss).Status).To(Equal(metav1.ConditionFalse))
	evs = e.events()
	g.Expect(eventsWith(evs, ReasonDataLossResolved)).To(HaveLen(1))
	g.Expect(e.dialer[2].calls["PrepareFailover"]).To(Equal(1), "elects once a majority holds the record: %v", evs)
}

// A member that reports data_loss_suspected (rolisd found too few members
// holding the cluster's data) stops promotions whatever the record says.
func TestAMemberThatReportsDataLossStopsTheElection(t *testing.T) {
	g := NewWithT(t)
	d := followers(3)
	for _, id := range []int32{2, 3} {
		d[id].status.DataLossSuspected = true
		d[id].status.DataLossReason = "2 of 3 members came back with an empty data directory; member 1 holds state"
	}
	e := newUnitEnv(t, 3, d, interceptor.Funcs{})
	_, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	for _, a := range d {
		g.Expect(a.calls["PrepareFailover"]).To(BeZero())
	}
	dl := e.condition(t, dbv1.ConditionDataLoss)
	g.Expect(dl.Reason).To(Equal(leadership.DataLossReported))
	g.Expect(dl.Message).To(ContainSubstring("2 of 3 members report suspected data loss (db-2: 2 of 3 members came back"))
	cur := getUnitCluster(t, e)
	g.Expect(cur.Status.Members[1].DataLossSuspected).To(BeTrue())
	g.Expect(cur.Status.Members[1].Message).To(ContainSubstring("member 1 holds state"))
	g.Expect(eventsWith(e.events(), ReasonDataLossSuspected)).To(HaveLen(1))
}

// A candidate older than the record while a majority still holds it (the
// others are unhealthy or gone) is promoted, never silently: a Warning
// event names it with its epoch and watermark against the record.
func TestACandidateBehindTheRecordIsPromotedWithAWarning(t *testing.T) {
	g := NewWithT(t)
	e := servingCluster(t)
	e.dialer[1].status.Watermark = &rolisv1.LogKey{Epoch: 1, Ts: 500}
	_, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	e.events()

	e.dialer[1].statusErr = errors.New("dial tcp 10.0.0.1:7001: connect: connection refused")
	e.dialer[2].status.Healthy = false // holds the record, cannot lead now
	e.dialer[2].status.PromisedEpoch = 1
	e.dialer[3].status = &rolisv1.StatusResponse{Id: 3, Role: rolisv1.Role_FOLLOWER, Healthy: true, Watermark: &rolisv1.LogKey{}}
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.condition(t, dbv1.ConditionDataLoss).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(e.dialer[3].calls["PrepareFailover"]).To(Equal(1))
	evs := e.events()
	warn := eventsWith(evs, ReasonCandidateBehindRecord)
	g.Expect(warn).To(HaveLen(1), "%v", evs)
	g.Expect(warn[0]).To(ContainSubstring("promoting db-3 (epoch 0, promised 0, decided 0, watermark (0,0)), which is older than the decided record (epoch 1, leader 1, watermark (0,0), last seen watermark (1,500))"))
}

// A member that runs with another durability than the spec's is Degraded.
func TestAMemberWithAnotherDurabilityIsReported(t *testing.T) {
	g := NewWithT(t)
	d := followers(3)
	d[1].status.Durability, d[2].status.Durability = "disk", "memory"
	e := newUnitEnv(t, 3, d, interceptor.Funcs{})
	_, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	cond := e.condition(t, dbv1.ConditionDegraded)
	g.Expect(cond.Reason).To(Equal(ReasonDurabilityMismatch))
	g.Expect(cond.Message).To(Equal("db-2 runs with durability memory while spec.durability is disk: its acknowledgements do not promise what the spec says"))
}

func getUnitCluster(t *testing.T, e *unitEnv) *dbv1.RolisCluster {
	t.Helper()
	cur := &dbv1.RolisCluster{}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(e.db), cur); err != nil {
		t.Fatal(err)
	}
	return cur
}
