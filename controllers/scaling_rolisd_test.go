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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
	"github.com/rolisdb/rolis/internal/ledger"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// Scaling 3 → 5 → 3 with the operator driving real rolisd processes: the
// test plays the StatefulSet controller and the kubelet (a pod and its
// process start when the StatefulSet grows, and go when it shrinks) under
// the ledger's load; afterwards the leader and both remaining followers
// hold every acknowledged transaction.
var _ = Describe("Scaling against real rolisd processes", Label("rolisd"), func() {
	It("adds two members and removes them again under load, losing no acknowledged transaction", func() {
		bin := rolisdBinary()
		if bin == "" {
			Skip("no rolisd binary (set ROLISD, or run `make engine` to build bin/rolisd); scaling runs against the fakes in rollout_test.go")
		}
		ctx := context.Background()
		// Members 4 and 5 are spares: started only when their pods are,
		// with --peers listing all five, as the grown StatefulSet's
		// ConfigMap gives it.
		procs := testserver.Start(GinkgoTB(), testserver.Options{
			Members: 5, Initial: 3, Binary: bin, Args: memberArgs(),
		})
		ns := newNamespace(ctx)
		c := newCluster(ns, "db", 3)
		// The processes run without --data-dir (durability memory); the
		// spec says so, or the operator reports DurabilityMismatch.
		c.Spec.Durability = dbv1.DurabilityMemory
		c.Spec.Failover.Timeout = &metav1.Duration{Duration: 5 * time.Second}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		processes.setProcesses(ns, c.Name, procs)
		adminOf := func(id int32) string { return procs.Member(int(id)).AdminAddr }
		startPods(ctx, c, []int32{1, 2, 3}, "rev1", adminOf)
		_, epoch := servingLeader(ctx, c)

		replicas := func() int32 {
			sts := &appsv1.StatefulSet{}
			Expect(k8s.Get(ctx, byKey(ns, specs.StatefulSetName(c)), sts)).To(Succeed())
			return *sts.Spec.Replicas
		}
		// membership is the configuration as member id reports it (the
		// decided leader's when id is 0).
		membership := func(id int32) func() []int32 {
			return func() []int32 {
				of := id
				if of == 0 {
					of = int32(epochRecord(ctx, ns)().GetLeaderId())
				}
				st, err := memberStatus(adminOf(of))
				if err != nil {
					return nil
				}
				return leadership.MemberIDs(st.GetMembers())
			}
		}

		w := startLedgerLoad(ctx, procs.ClientAddrs()[:3], 17)
		Eventually(w.Acked, "10s").Should(BeNumerically(">", 20), "the load runs through the elected leader")
		// current is the leader's membership now (retrying only a failed read).
		current := func() []int32 {
			GinkgoHelper()
			var ids []int32
			Eventually(func() []int32 { ids = membership(0)(); return ids }, "10s").ShouldNot(BeNil())
			return ids
		}
		progresses := func(what string) {
			GinkgoHelper()
			acked := w.Acked()
			Eventually(w.Acked, "20s").Should(BeNumerically(">", acked+20), "writes are acknowledged %s", what)
		}

		By("3 → 5: a pod and its process start each time the StatefulSet grows; the leader adds the member once it answers")
		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) { c.Spec.Replicas = 5 })).To(Succeed())
		for _, id := range []int32{4, 5} {
			Eventually(replicas, "60s").Should(Equal(id), "the StatefulSet grows by one")
			Expect(current()).To(Equal(specs.MemberIDs(id-1)), "the membership waits for the new member")
			Expect(procs.Member(int(id)).Restart(30*time.Second)).To(Succeed(), "member %d starts, empty", id)
			startPods(ctx, c, []int32{id}, "rev1", adminOf)
			Eventually(membership(0), "60s").Should(Equal(specs.MemberIDs(id)), "the leader adds member %d", id)
			progresses(fmt.Sprintf("with %d members", id))
		}
		for _, id := range specs.MemberIDs(5) {
			Eventually(membership(id), "30s").Should(Equal(specs.MemberIDs(5)), "member %d knows the configuration", id)
		}
		Eventually(condition(ctx, c, dbv1.ConditionReady), "60s").Should(HavePrefix("True/"))

		By("5 → 3: the leader removes members 5 and 4, one at a time; then the StatefulSet shrinks and their pods go")
		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) { c.Spec.Replicas = 3 })).To(Succeed())
		Eventually(replicas, "60s").Should(Equal(int32(3)), "the StatefulSet shrinks")
		Expect(current()).To(Equal(specs.MemberIDs(3)), "members 4 and 5 left the membership before their pods go")
		for _, id := range []int32{5, 4} {
			Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: specs.PodName(c, id)}})).To(Succeed())
			_, _ = procs.Member(int(id)).Stop(10 * time.Second) // its exit status says nothing here
		}
		progresses("after members 4 and 5 left")
		Eventually(condition(ctx, c, dbv1.ConditionReady), "60s").Should(HavePrefix("True/"))
		Expect(eventReasons(ctx, c)()).To(ContainElements(ReasonScaling, ReasonMembershipChanged))
		// Scaling needs no failover; on a loaded machine a leader that did
		// not answer the operator's probes for failover.timeout may still be
		// replaced, which the ledger below covers as well.
		AddReportEntry("epochs during scaling", fmt.Sprintf("from %d to %d", epoch, epochRecord(ctx, ns)().GetEpoch()), ReportEntryVisibilityAlways)
		w.Stop()
		decided, _ := servingLeader(ctx, c)
		leader := int32(decided)

		By("the leader and both followers hold every acknowledged transaction")
		rctx, rcancel := context.WithTimeout(ctx, 60*time.Second)
		defer rcancel()
		call := w.Now()
		state, err := ledger.Dump(rctx, client.Config{Endpoints: []string{procs.Member(int(leader)).ClientAddr}}, true)
		Expect(err).NotTo(HaveOccurred())
		snaps := []ledger.Snapshot{{What: fmt.Sprintf("leader db-%d", leader), State: state, Leader: true, Call: call, Return: w.Now()}}
		for _, id := range specs.MemberIDs(3) {
			if id == leader {
				continue
			}
			var follower map[string]string
			var fcall int64
			// A follower replays up to the watermark: wait until it has
			// replayed what the leader's read saw.
			Eventually(func() int {
				fcall = w.Now()
				follower, err = ledger.Dump(rctx, client.Config{Endpoints: []string{procs.Member(int(id)).ClientAddr}}, false)
				if err != nil {
					return -1
				}
				return len(follower)
			}, "30s").Should(Equal(len(state)), "member %d replays what the leader holds", id)
			snaps = append(snaps, ledger.Snapshot{What: fmt.Sprintf("follower db-%d", id), State: follower, Call: fcall, Return: w.Now()})
		}
		fmt.Fprintf(GinkgoWriter, "ledger after 3 → 5 → 3: %s\n", w.Check(snaps))
	})
})
