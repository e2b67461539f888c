/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// rolisdBinary finds a built rolisd: $ROLISD, else bin/rolisd, else the
// CMake build folder. $ROLISD pointing nowhere is an error.
func rolisdBinary() string {
	if p := os.Getenv("ROLISD"); p != "" {
		if _, err := os.Stat(p); err != nil {
			Fail(fmt.Sprintf("ROLISD=%s: %v", p, err))
		}
		return p
	}
	for _, p := range []string{filepath.Join("..", "bin", "rolisd"), filepath.Join("..", "build", "engine", "bin", "rolisd")} {
		if _, err := os.Stat(p); err == nil {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	return ""
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close() //nolint:errcheck
	return l.Addr().(*net.TCPAddr).Port
}

// rolisdProcess is one real rolisd on loopback, started the way the
// StatefulSet starts it (--id, --peers, --election=none, listen flags).
type rolisdProcess struct {
	id                     int32
	cmd                    *exec.Cmd
	admin, metrics, client string
	replication            string
}

func startRolisd(bin string, n int) []*rolisdProcess {
	procs := make([]*rolisdProcess, n)
	var peers []string
	for i := range procs {
		procs[i] = &rolisdProcess{
			id:          int32(i + 1),
			client:      fmt.Sprintf("127.0.0.1:%d", freePort()),
			admin:       fmt.Sprintf("127.0.0.1:%d", freePort()),
			metrics:     fmt.Sprintf("127.0.0.1:%d", freePort()),
			replication: fmt.Sprintf("127.0.0.1:%d", freePort()),
		}
		peers = append(peers, fmt.Sprintf("%d=%s", i+1, procs[i].replication))
	}
	for _, p := range procs {
		p.cmd = exec.Command(bin,
			"--id="+strconv.Itoa(int(p.id)), "--peers="+strings.Join(peers, ","),
			"--listen="+p.client, "--admin-listen="+p.admin, "--metrics-listen="+p.metrics,
			"--election=none", "--worker-threads=1", "--log-format=json")
		p.cmd.Stdout, p.cmd.Stderr = GinkgoWriter, GinkgoWriter
		Expect(p.cmd.Start()).To(Succeed())
		proc := p.cmd
		DeferCleanup(func() {
			_ = proc.Process.Kill()
			_ = proc.Wait()
		})
	}
	for _, p := range procs {
		Eventually(func() (int, error) {
			resp, err := http.Get("http://" + p.metrics + "/readyz")
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close() //nolint:errcheck
			return resp.StatusCode, nil
		}, "20s").Should(Equal(http.StatusOK), "rolisd %d serves", p.id)
	}
	return procs
}

// requests reads rolis_requests_total{method=...} (all codes) from a member.
func (p *rolisdProcess) requests(method string) int {
	resp, err := http.Get("http://" + p.metrics + "/metrics")
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close() //nolint:errcheck
	total := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "rolis_requests_total{") && strings.Contains(line, `method="`+method+`"`) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			Expect(err).NotTo(HaveOccurred())
			total += int(v)
		}
	}
	return total
}

var _ = Describe("Against real rolisd processes", Label("rolisd"), func() {
	// A rolisd built before the replication layer answers Status (role
	// FOLLOWER when started with --peers) and UNIMPLEMENTED to every
	// failover call. The election path must stop there, say why, and not
	// hammer the members. With the replication layer in, the same setup
	// elects a leader (see docs/operator.md for the 3-process test to add).
	It("probes every member and reports that the image cannot elect a leader, without hot-looping", func() {
		bin := rolisdBinary()
		if bin == "" {
			Skip("no rolisd binary (set ROLISD, or run `make engine` to build bin/rolisd); the same path runs against the in-process fakes above")
		}
		ctx := context.Background()
		ns := newNamespace(ctx)
		procs := startRolisd(bin, 3)
		c := newCluster(ns, "db", 3)
		c.Spec.Failover.Timeout = &metav1.Duration{Duration: 10 * time.Second} // backoff well clear of the windows below
		Expect(k8s.Create(ctx, c)).To(Succeed())
		startPods(ctx, c, []int32{1, 2, 3}, "rev1", func(id int32) string { return procs[id-1].admin })

		Eventually(func() []string {
			var roles []string
			for _, m := range getCluster(ctx, c).Status.Members {
				roles = append(roles, fmt.Sprintf("%s:%s:%v", m.Name, m.Role, m.Healthy))
			}
			return roles
		}).Should(Equal([]string{"db-1:Follower:true", "db-2:Follower:true", "db-3:Follower:true"}))

		// Today's rolisd cannot fail over; once the replication layer is
		// built, the same cluster elects a leader. Either way the operator
		// must end in a clear state.
		Eventually(func() string {
			if d := condition(ctx, c, dbv1.ConditionDegraded)(); strings.HasPrefix(d, "True/"+ReasonFailoverUnsupported) {
				return "unsupported"
			}
			if strings.HasPrefix(condition(ctx, c, dbv1.ConditionAvailable)(), "True/") {
				return "elected"
			}
			return "pending"
		}, "30s").ShouldNot(Equal("pending"))

		if strings.HasPrefix(condition(ctx, c, dbv1.ConditionAvailable)(), "True/") {
			By("rolisd has the replication layer: a leader was elected")
			Expect(epochRecord(ctx, ns)().GetEpoch()).To(BeNumerically(">=", 1))
			Eventually(podRoles(ctx, c)).Should(ContainElement("leader"))
			return
		}

		By("rolisd has no replication layer: Degraded, nothing decided, no hot loop")
		Expect(condition(ctx, c, dbv1.ConditionDegraded)()).To(ContainSubstring("answered UNIMPLEMENTED to Prepare"))
		Expect(condition(ctx, c, dbv1.ConditionAvailable)()).To(HavePrefix("False/NoLeader"))
		Expect(epochRecord(ctx, ns)().GetEpoch()).To(BeZero())
		Expect(eventNotes(ctx, c, ReasonFailoverUnsupported)).NotTo(BeEmpty())

		prepares := func() int {
			n := 0
			for _, p := range procs {
				n += p.requests("PrepareFailover")
			}
			return n
		}
		Expect(prepares()).To(Equal(1))
		Consistently(prepares, "3s", "500ms").Should(Equal(1), "backoff (failover.timeout, doubling), no hot loop")
		Expect(podRoles(ctx, c)()).NotTo(ContainElement("leader"))
	})
})
