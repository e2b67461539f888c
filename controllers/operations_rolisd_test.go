/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
	"github.com/rolisdb/rolis/internal/ledger"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// annotate sets (or, with value "", removes) an annotation of the cluster.
func annotate(ctx context.Context, c *dbv1.RolisCluster, key, value string) {
	GinkgoHelper()
	Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
		if value == "" {
			delete(c.Annotations, key)
			return
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[key] = value
	})).To(Succeed())
}

func annotation(ctx context.Context, c *dbv1.RolisCluster, key string) func() string {
	return func() string { return getCluster(ctx, c).Annotations[key] }
}

// checkLedgerOnLeader dumps the decided leader's state and checks that it
// holds every transaction the workload saw acknowledged.
func checkLedgerOnLeader(ctx context.Context, c *dbv1.RolisCluster, procs *testserver.Cluster, w *ledger.Workload) {
	GinkgoHelper()
	w.Stop()
	id, _ := servingLeader(ctx, c)
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	call := w.Now()
	state, err := ledger.Dump(rctx, client.Config{Endpoints: []string{procs.Member(int(id)).ClientAddr}}, true)
	Expect(err).NotTo(HaveOccurred())
	fmt.Fprintf(GinkgoWriter, "ledger: %s\n", w.Check([]ledger.Snapshot{
		{What: fmt.Sprintf("leader db-%d", id), State: state, Leader: true, Call: call, Return: w.Now()}}))
}

// startRealCluster starts three rolisd processes and a cluster whose pods
// they answer for, and waits for the first leader.
func startRealCluster(ctx context.Context) (*dbv1.RolisCluster, *testserver.Cluster, uint32, uint64) {
	GinkgoHelper()
	bin := rolisdBinary()
	if bin == "" {
		Skip("no rolisd binary (set ROLISD, or run `make engine` to build bin/rolisd)")
	}
	procs := testserver.Start(GinkgoTB(), testserver.Options{Members: 3, Binary: bin, Args: memberArgs()})
	ns := newNamespace(ctx)
	c := newCluster(ns, "db", 3)
	c.Spec.Durability = dbv1.DurabilityMemory // the processes run without --data-dir
	c.Spec.Failover.Timeout = &metav1.Duration{Duration: 5 * time.Second}
	Expect(k8s.Create(ctx, c)).To(Succeed())
	processes.setProcesses(ns, c.Name, procs)
	startPods(ctx, c, []int32{1, 2, 3}, "rev1", func(id int32) string { return procs.Member(int(id)).AdminAddr })
	leader, epoch := servingLeader(ctx, c)
	return c, procs, leader, epoch
}

var _ = Describe("Planned switchover against real rolisd processes", Label("rolisd"), func() {
	It("moves leadership to the member rolis.io/promote names, records it, and loses no acknowledged transaction", func() {
		ctx := context.Background()
		c, procs, first, epoch := startRealCluster(ctx)
		w := startLedgerLoad(ctx, procs.ClientAddrs(), 43)
		Eventually(w.Acked, "20s").Should(BeNumerically(">", 50), "writes are acknowledged through the first leader")

		By("a request naming no member is dropped with a warning, changing nothing")
		annotate(ctx, c, dbv1.AnnotationPromote, "db-9")
		Eventually(annotation(ctx, c, dbv1.AnnotationPromote)).Should(BeEmpty())
		Expect(eventReasons(ctx, c)()).To(ContainElement(ReasonSwitchoverRejected))
		Expect(epochRecord(ctx, c.Namespace)().GetEpoch()).To(Equal(epoch))

		By("promote a follower")
		target := first%3 + 1
		annotate(ctx, c, dbv1.AnnotationPromote, specs.PodName(c, int32(target)))
		Eventually(func() uint32 { return epochRecord(ctx, c.Namespace)().GetLeaderId() }, "60s").Should(Equal(target))
		id, after := servingLeader(ctx, c)
		Expect(id).To(Equal(target))
		Expect(after).To(BeNumerically(">", epoch))
		Eventually(annotation(ctx, c, dbv1.AnnotationPromote)).Should(BeEmpty(), "the request is cleared once done")
		Eventually(func() *dbv1.SwitchoverRecord { return getCluster(ctx, c).Status.LastSwitchover }).ShouldNot(BeNil())
		last := getCluster(ctx, c).Status.LastSwitchover
		Expect(last.From).To(Equal(specs.PodName(c, int32(first))))
		Expect(last.To).To(Equal(specs.PodName(c, int32(target))))
		Expect(last.Epoch).To(Equal(int64(after)))
		Expect(last.Reason).To(Equal(SwitchoverRequested))
		Expect(eventReasons(ctx, c)()).To(ContainElement(ReasonSwitchover))
		Eventually(podRoles(ctx, c)).Should(Equal(rolesWith(c, target)))
		requested := map[string]string{"namespace": c.Namespace, "rolis_cluster": c.Name, "reason": ChangeRequested}
		Eventually(func() float64 { v, _, _ := sample(GinkgoT(), "rolis_operator_switchovers_total", requested); return v }).
			Should(Equal(1.0), "the switchover counts as requested")

		By("promoting the member that leads changes nothing")
		annotate(ctx, c, dbv1.AnnotationPromote, fmt.Sprint(target))
		Eventually(annotation(ctx, c, dbv1.AnnotationPromote)).Should(BeEmpty())
		Expect(epochRecord(ctx, c.Namespace)().GetEpoch()).To(Equal(after))

		acked := w.Acked()
		Eventually(w.Acked, "20s").Should(BeNumerically(">", acked+20), "writes go on through the new leader")
		checkLedgerOnLeader(ctx, c, procs, w)
	})
})

var _ = Describe("Fencing against real rolisd processes", Label("rolisd"), func() {
	It("takes a member out of the voting configuration, refuses a fence without a majority, and adds the member back", func() {
		ctx := context.Background()
		c, procs, leader, _ := startRealCluster(ctx)
		adminOf := func(id int32) string { return procs.Member(int(id)).AdminAddr }
		membership := func() []int32 {
			st, err := memberStatus(adminOf(int32(epochRecord(ctx, c.Namespace)().GetLeaderId())))
			if err != nil {
				return nil
			}
			return leadership.MemberIDs(st.GetMembers())
		}
		w := startLedgerLoad(ctx, procs.ClientAddrs(), 47)
		Eventually(w.Acked, "20s").Should(BeNumerically(">", 50))
		all := []string{specs.PodName(c, 1), specs.PodName(c, 2), specs.PodName(c, 3)}
		Eventually(readServicePods(ctx, c)).Should(ConsistOf(all), "every member takes reads")

		By("fence the leader: a switchover first, then its removal")
		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) { c.Spec.FencedMembers = []int32{int32(leader)} })).To(Succeed())
		var rest []int32
		for _, id := range specs.MemberIDs(3) {
			if id != int32(leader) {
				rest = append(rest, id)
			}
		}
		Eventually(membership, "60s").Should(Equal(rest))
		Expect(epochRecord(ctx, c.Namespace)().GetLeaderId()).NotTo(Equal(leader), "the fenced member does not lead")
		Eventually(condition(ctx, c, dbv1.ConditionFenced), "30s").Should(HavePrefix("True/" + ReasonFenced))
		Eventually(func() []int32 { return getCluster(ctx, c).Status.FencedMembers }).Should(Equal([]int32{int32(leader)}))
		Eventually(func() string { return podRoles(ctx, c)()[specs.PodName(c, int32(leader))] }).Should(Equal(specs.RoleFenced))
		var serving []string
		for _, id := range rest {
			serving = append(serving, specs.PodName(c, id))
		}
		Eventually(readServicePods(ctx, c)).Should(ConsistOf(serving), "the read Service leaves the fenced member out")
		acked := w.Acked()
		Eventually(w.Acked, "20s").Should(BeNumerically(">", acked+20), "writes go on with two voters")

		By("a second fence would leave one voter of three: refused, nothing changes")
		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) { c.Spec.FencedMembers = []int32{int32(leader), rest[0]} })).To(Succeed())
		Eventually(condition(ctx, c, dbv1.ConditionFenced)).Should(HavePrefix("True/" + ReasonFenceRefused))
		Eventually(condition(ctx, c, dbv1.ConditionDegraded)).Should(HavePrefix("True/" + ReasonFenceRefused))
		Consistently(membership, "3s").Should(Equal(rest))
		Expect(eventReasons(ctx, c)()).To(ContainElement(ReasonFenceRefused))

		By("unfence: the member is added back")
		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) { c.Spec.FencedMembers = nil })).To(Succeed())
		Eventually(membership, "60s").Should(Equal(specs.MemberIDs(3)))
		Eventually(condition(ctx, c, dbv1.ConditionFenced), "30s").Should(HavePrefix("False/" + ReasonNoneFenced))
		Eventually(func() string { return podRoles(ctx, c)()[specs.PodName(c, int32(leader))] }).Should(Equal(specs.RoleFollower))
		Eventually(readServicePods(ctx, c)).Should(ConsistOf(all), "the read Service takes the unfenced member back")
		Eventually(condition(ctx, c, dbv1.ConditionReady), "60s").Should(HavePrefix("True/"))
		checkLedgerOnLeader(ctx, c, procs, w)
	})
})

var _ = Describe("Clearing a request annotation", func() {
	It("removes the value acted on, never a newer request", func() {
		ctx := context.Background()
		ns := newNamespace(ctx)
		c := newCluster(ns, "db", 3)
		c.Annotations = map[string]string{dbv1.AnnotationPromote: "db-2"}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		r := &Reconciler{Client: k8s}
		Expect(r.clearAnnotation(ctx, c, dbv1.AnnotationPromote, "db-3")).To(Succeed(), "a changed request is not an error")
		Expect(getCluster(ctx, c).Annotations).To(HaveKeyWithValue(dbv1.AnnotationPromote, "db-2"))
		Expect(r.clearAnnotation(ctx, c, dbv1.AnnotationPromote, "db-2")).To(Succeed())
		Expect(getCluster(ctx, c).Annotations).NotTo(HaveKey(dbv1.AnnotationPromote))
		Expect(r.clearAnnotation(ctx, c, dbv1.AnnotationPromote, "db-2")).To(Succeed(), "a request already gone")
	})
})
