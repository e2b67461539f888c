/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/internal/ledger"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// promotingNote is the operator's Promoting event: the candidate with the
// state it answered with.
var promotingNote = regexp.MustCompile(`promoting (\S+) \(epoch (\d+), watermark \((\d+),(\d+)\), decided epoch (\d+), (\d+) slots\) to epoch (\d+)`)

var _ = Describe("A full restart of real rolisd members with their data directories", Label("rolisd"), func() {
	It("re-elects the most advanced member and loses no acknowledged transaction", func() {
		bin := rolisdBinary()
		if bin == "" {
			Skip("no rolisd binary (set ROLISD, or run `make engine` to build bin/rolisd)")
		}
		ctx := context.Background()
		data := GinkgoT().TempDir()
		procs := testserver.Start(GinkgoTB(), testserver.Options{
			Members: 3, Binary: bin, Args: memberArgs("--durability=disk"),
			MemberArgs: func(id int) []string {
				return []string{"--data-dir=" + filepath.Join(data, fmt.Sprintf("member-%d", id))}
			},
		})
		ns := newNamespace(ctx)
		c := newCluster(ns, "db", 3)
		c.Spec.Failover.Timeout = &metav1.Duration{Duration: 5 * time.Second}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Expect(getCluster(ctx, c).Spec.Durability).To(Equal(dbv1.DurabilityDisk), "the default")
		processes.setProcesses(ns, c.Name, procs)
		startPods(ctx, c, []int32{1, 2, 3}, "rev1", func(id int32) string { return procs.Member(int(id)).AdminAddr })
		first, epoch := servingLeader(ctx, c)

		w := startLedgerLoad(ctx, procs.ClientAddrs(), 31)
		Eventually(w.Acked, "20s").Should(BeNumerically(">", 100), "writes are acknowledged through the first leader")
		Eventually(func() []string {
			var modes []string
			for _, m := range getCluster(ctx, c).Status.Members {
				modes = append(modes, m.Durability)
			}
			return modes
		}, "10s").Should(Equal([]string{"disk", "disk", "disk"}), "the status shows each member's durability")
		Expect(condition(ctx, c, dbv1.ConditionDataLoss)()).To(HavePrefix("False/" + ReasonNoDataLoss))

		By("every member killed at once, then started again with its data directory")
		before := map[int]*rolisv1.StatusResponse{}
		for _, m := range procs.Members {
			st, err := memberStatus(m.AdminAddr)
			Expect(err).NotTo(HaveOccurred())
			before[m.ID] = st
		}
		acked := w.Acked()
		// While they restart, the operator cannot reach them (the test
		// points their pods at a closed port), so that the test reads the
		// state each member recovered before anything changes it.
		for _, m := range procs.Members {
			processes.set(ns, c.Name, int32(m.ID), "127.0.0.1:1")
		}
		for _, m := range procs.Members {
			_, _ = m.Kill() // its exit status says nothing here
		}
		AddReportEntry("killed", fmt.Sprintf("leader db-%d, epoch %d, %d acknowledged", first, epoch, acked), ReportEntryVisibilityAlways)
		errs := make(chan error, len(procs.Members))
		for _, m := range procs.Members {
			go func() { errs <- m.Restart(60 * time.Second) }()
		}
		for range procs.Members {
			Expect(<-errs).To(Succeed())
		}
		recovered := make([]leadership.Member, 0, len(procs.Members))
		for _, m := range procs.Members {
			st, err := memberStatus(m.AdminAddr)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.GetDurability()).To(Equal("disk"))
			Expect(st.GetDataLossSuspected()).To(BeFalse(), "member %d: %s", m.ID, st.GetDataLossReason())
			Expect(st.GetRecovery()).NotTo(BeEmpty(), "member %d says what it recovered", m.ID)
			fmt.Fprintf(GinkgoWriter, "member %d before the kill: epoch %d, watermark %s, %d slots; recovered: epoch %d, promised %d, decided %d, watermark %s, %d slots (%s)\n",
				m.ID, before[m.ID].GetEpoch(), keyString(before[m.ID].GetWatermark()), leadership.SlotsHeld(&leadership.Member{Status: before[m.ID]}),
				st.GetEpoch(), st.GetPromisedEpoch(), st.GetDecided().GetEpoch(), keyString(st.GetWatermark()),
				leadership.SlotsHeld(&leadership.Member{Status: st}), st.GetRecovery())
			recovered = append(recovered, leadership.Member{ID: int32(m.ID), Pod: specs.PodName(c, int32(m.ID)), PodExists: true, Ready: true, Status: st})
		}
		// The old leader restarted: the operator fails over from it, so it
		// is not a candidate (docs/operator.md, "Data loss").
		want, err := leadership.ChooseCandidate(recovered, map[int32]bool{int32(first): true})
		Expect(err).NotTo(HaveOccurred())

		By("the operator re-elects from the recovered state")
		for _, m := range procs.Members {
			processes.set(ns, c.Name, int32(m.ID), m.AdminAddr)
		}
		Eventually(func() uint64 { return epochRecord(ctx, ns)().GetEpoch() }, "60s").Should(BeNumerically(">", epoch))
		leader, next := servingLeader(ctx, c)
		Expect(leader).To(Equal(uint32(want.ID)), "the most advanced recovered member other than the old leader: %s",
			leadership.DescribeState(want))
		Expect(condition(ctx, c, dbv1.ConditionDataLoss)()).To(HavePrefix("False/" + ReasonNoDataLoss))
		Expect(eventReasons(ctx, c)()).NotTo(ContainElement(ReasonDataLossSuspected))
		Expect(eventReasons(ctx, c)()).NotTo(ContainElement(ReasonCandidateBehindRecord))
		var chosen []string
		for _, note := range eventNotes(ctx, c, ReasonPromoting) {
			if m := promotingNote.FindStringSubmatch(note); m != nil && m[7] == strconv.FormatUint(next, 10) {
				chosen = m
			}
		}
		Expect(chosen).NotTo(BeNil(), "a Promoting event for epoch %d", next)
		Expect(chosen[1]).To(Equal(want.Pod))
		Expect(chosen[5]).To(Equal(strconv.FormatUint(epoch, 10)), "the candidate's recovered decided epoch")
		Expect(chosen[6]).To(Equal(strconv.FormatUint(leadership.SlotsHeld(want), 10)), "the candidate's recovered log")
		AddReportEntry("re-elected", fmt.Sprintf("db-%d at epoch %d: %s", leader, next, chosen[0]), ReportEntryVisibilityAlways)

		By("writes go on, and the new leader holds every acknowledged transaction")
		Eventually(w.Acked, "30s").Should(BeNumerically(">", w.Acked()+20))
		w.Stop()
		rctx, rcancel := context.WithTimeout(ctx, 60*time.Second)
		defer rcancel()
		call := w.Now()
		state, err := ledger.Dump(rctx, client.Config{Endpoints: []string{procs.Member(int(leader)).ClientAddr}}, true)
		Expect(err).NotTo(HaveOccurred())
		fmt.Fprintf(GinkgoWriter, "ledger after a full restart: %s\n", w.Check([]ledger.Snapshot{
			{What: fmt.Sprintf("leader db-%d", leader), State: state, Leader: true, Call: call, Return: w.Now()},
		}))
	})
	// The Kind run with real processes: durability memory, every
	// member killed and restarted after acknowledged writes. The members
	// come back empty; the operator must say so (DataLoss, Degraded, one
	// Warning event naming them against the record) and promote no one.
	It("with durability memory, reports the lost data and promotes no one", func() {
		bin := rolisdBinary()
		if bin == "" {
			Skip("no rolisd binary (set ROLISD, or run `make engine` to build bin/rolisd)")
		}
		ctx := context.Background()
		procs := testserver.Start(GinkgoTB(), testserver.Options{Members: 3, Binary: bin, Args: memberArgs("--durability=memory")})
		ns := newNamespace(ctx)
		c := newCluster(ns, "db", 3)
		c.Spec.Durability = dbv1.DurabilityMemory
		c.Spec.Failover.Timeout = &metav1.Duration{Duration: 5 * time.Second}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		processes.setProcesses(ns, c.Name, procs)
		startPods(ctx, c, []int32{1, 2, 3}, "rev1", func(id int32) string { return procs.Member(int(id)).AdminAddr })
		_, epoch := servingLeader(ctx, c)

		w := startLedgerLoad(ctx, procs.ClientAddrs(), 32)
		Eventually(w.Acked, "20s").Should(BeNumerically(">", 100))
		w.Stop()
		Eventually(func() int64 {
			if g := getCluster(ctx, c).Status.Watermark; g != nil {
				return g.TS
			}
			return 0
		}, "10s").Should(BeNumerically(">", 0), "the operator saw the leader's watermark move")

		By("every member killed and started again: they come back empty")
		for _, m := range procs.Members {
			_, _ = m.Kill()
		}
		errs := make(chan error, len(procs.Members))
		for _, m := range procs.Members {
			go func() { errs <- m.Restart(60 * time.Second) }()
		}
		for range procs.Members {
			Expect(<-errs).To(Succeed())
		}
		for _, m := range procs.Members {
			st, err := memberStatus(m.AdminAddr)
			Expect(err).NotTo(HaveOccurred())
			fmt.Fprintf(GinkgoWriter, "member %d after the restart: %s role %s durability %q data loss %v %q\n", m.ID,
				leadership.DescribeState(&leadership.Member{Pod: specs.PodName(c, int32(m.ID)), Status: st}),
				st.GetRole(), st.GetDurability(), st.GetDataLossSuspected(), st.GetDataLossReason())
		}

		By("the operator reports the loss and promotes no one")
		Eventually(condition(ctx, c, dbv1.ConditionDataLoss), "30s").Should(HavePrefix("True/"))
		Expect(condition(ctx, c, dbv1.ConditionDegraded)()).To(HavePrefix("True/" + ReasonDataLossSuspected))
		Eventually(func() []string { return eventNotes(ctx, c, ReasonDataLossSuspected) }, "10s").Should(HaveLen(1))
		note := eventNotes(ctx, c, ReasonDataLossSuspected)[0]
		Expect(note).To(ContainSubstring(fmt.Sprintf("the decided record (epoch %d", epoch)))
		fmt.Fprintf(GinkgoWriter, "DataLossSuspected: %s\n", note)
		Consistently(func() uint64 { return epochRecord(ctx, ns)().GetEpoch() }, "6s", "500ms").Should(Equal(epoch),
			"no epoch decided over the lost data")
		Expect(eventNotes(ctx, c, ReasonPromoting)).To(HaveLen(1), "only the first election")
		Expect(eventNotes(ctx, c, ReasonDataLossSuspected)).To(HaveLen(1), "one event for one state")
		Expect(getCluster(ctx, c).Status.Phase).To(Equal(dbv1.PhaseDegraded))
	})
})
