/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/internal/ledger"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// A measurement, not a test of a bound: with ROLIS_FAILOVER_GAP_RUNS=N it
// kills the leader's rolisd with SIGKILL N times, then deletes the leader's
// pod N times (the test plays the kubelet: SIGTERM, --shutdown-grace, a new
// pod), each under the ledger load, and prints for each fault the time to
// the first acknowledged write issued after it, the longest stretch without
// any acknowledged write, and which path the operator took (the first
// detection event). It checks the ledger at the end. Without the variable
// it is skipped.
//
//	ROLIS_FAILOVER_GAP_RUNS=5 KUBEBUILDER_ASSETS=$(make -s envtest-assets) ROLISD=$PWD/build/operator/bin/rolisd \
//	  go test ./controllers/ -count=1 -v -ginkgo.label-filter=failover-gap
var _ = Describe("Failover gap measurement", Ordered, Label("rolisd", "failover-gap"), func() {
	var (
		ctx   context.Context
		runs  int
		c     *dbv1.RolisCluster
		procs *testserver.Cluster
	)
	timeout := 3 * time.Second

	BeforeAll(func() {
		runs, _ = strconv.Atoi(os.Getenv("ROLIS_FAILOVER_GAP_RUNS"))
		if runs <= 0 {
			Skip("set ROLIS_FAILOVER_GAP_RUNS=N to measure the failover gap")
		}
		if d, err := time.ParseDuration(os.Getenv("ROLIS_FAILOVER_TIMEOUT")); err == nil {
			timeout = d
		}
		bin := rolisdBinary()
		Expect(bin).NotTo(BeEmpty(), "the measurement needs rolisd (ROLISD)")
		ctx = context.Background()
		procs = testserver.Start(GinkgoTB(), testserver.Options{
			Members: 3, Binary: bin, Args: memberArgs(),
		})
		c = newCluster(newNamespace(ctx), "db", 3)
		// The processes run without --data-dir (durability memory); the
		// spec says so, or the operator reports DurabilityMismatch.
		c.Spec.Durability = dbv1.DurabilityMemory
		c.Spec.Failover.Timeout = &metav1.Duration{Duration: timeout}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		startPods(ctx, c, []int32{1, 2, 3}, "rev1", func(id int32) string { return procs.Member(int(id)).AdminAddr })
	})

	It("measures leader SIGKILL and leader pod deletion to the first acknowledged write", func() {
		w := startLedgerLoad(ctx, procs.ClientAddrs(), 41)

		type sample struct {
			Fault    string  `json:"fault"`
			FirstAck float64 `json:"first_ack_s"`
			Longest  float64 `json:"longest_gap_s"`
			Path     string  `json:"path"`
		}
		var samples []sample
		for _, fault := range []string{"sigkill", "pod-delete"} {
			for i := 0; i < runs; i++ {
				old, epoch := servingLeader(ctx, c)
				for _, m := range procs.Members {
					if uint32(m.ID) != old {
						Eventually(memberRole(ctx, c, m.ID), "60s").Should(Equal("Follower"), "every follower caught up before the fault")
					}
				}
				acked := w.Acked()
				Eventually(w.Acked, "20s").Should(BeNumerically(">", acked+20), "the load runs")

				m := procs.Member(int(old))
				var at time.Time
				if fault == "sigkill" {
					at = time.Now()
					_, err := m.Kill()
					Expect(err).NotTo(HaveOccurred())
				} else {
					at = deleteMemberPod(ctx, c, m)
				}
				waitFailedOver(ctx, c, procs, old, epoch)
				var first time.Duration
				Eventually(func() bool {
					var ok bool
					first, ok = w.FirstAckAfter(at)
					return ok
				}, "60s").Should(BeTrue())
				acked = w.Acked()
				Eventually(w.Acked, "20s").Should(BeNumerically(">", acked+20), "writes go on")
				s := sample{Fault: fault, FirstAck: first.Seconds(), Longest: w.LongestWriteGap(at, time.Now()).Seconds(),
					Path: detectionPath(ctx, c, at)}
				samples = append(samples, s)
				fmt.Fprintf(GinkgoWriter, "%s run %d: first ack %.3f s, longest gap %.3f s, %s\n", fault, i+1, s.FirstAck, s.Longest, s.Path)

				if fault == "sigkill" {
					Expect(m.Restart(30 * time.Second)).To(Succeed())
				} else {
					recreateMember(ctx, c, m)
				}
			}
		}
		w.Stop()

		var table strings.Builder
		fmt.Fprintf(&table, "failover gap, failover.timeout %v, %d runs each\n", timeout, runs)
		fmt.Fprintf(&table, "%-11s %-28s %-28s %s\n", "fault", "first ack median / max (s)", "longest gap median / max (s)", "paths")
		summary := map[string]any{"failover_timeout_s": timeout.Seconds(), "runs": runs, "samples": samples}
		for _, fault := range []string{"sigkill", "pod-delete"} {
			var firsts, longest []float64
			paths := map[string]int{}
			for _, s := range samples {
				if s.Fault == fault {
					firsts, longest = append(firsts, s.FirstAck), append(longest, s.Longest)
					paths[s.Path]++
				}
			}
			fmt.Fprintf(&table, "%-11s %-28s %-28s %v\n", fault,
				fmt.Sprintf("%.2f / %.2f", median(firsts), slices.Max(firsts)),
				fmt.Sprintf("%.2f / %.2f", median(longest), slices.Max(longest)), paths)
			summary[fault] = map[string]float64{"first_ack_median_s": median(firsts), "first_ack_max_s": slices.Max(firsts),
				"longest_gap_median_s": median(longest), "longest_gap_max_s": slices.Max(longest)}
		}
		line, err := json.Marshal(summary)
		Expect(err).NotTo(HaveOccurred())
		fmt.Fprintf(GinkgoWriter, "%s%s\n", table.String(), line)
		AddReportEntry("failover gap", table.String()+string(line), ReportEntryVisibilityAlways)

		id, _ := servingLeader(ctx, c)
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		defer rcancel()
		call := w.Now()
		state, err := ledger.Dump(rctx, client.Config{Endpoints: []string{procs.Member(int(id)).ClientAddr}}, true)
		Expect(err).NotTo(HaveOccurred())
		fmt.Fprintf(GinkgoWriter, "ledger: %s\n", w.Check([]ledger.Snapshot{{What: "leader", State: state, Leader: true, Call: call, Return: w.Now()}}))
	})
})

// detectionPath names the first detection event of the cluster after t.
func detectionPath(ctx context.Context, c *dbv1.RolisCluster, t time.Time) string {
	for _, reason := range []string{ReasonLeaderLeaving, ReasonLeaderGone, ReasonLeaderUnhealthy} {
		if len(notesSince(ctx, c, reason, t)) > 0 {
			return reason
		}
	}
	return "none"
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
