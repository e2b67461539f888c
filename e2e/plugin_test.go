/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// plugin runs bin/kubectl-rolis (make build) against the Kind cluster.
func plugin(limit time.Duration, args ...string) (string, error) {
	return run(limit, filepath.Join(E.Root, "bin", "kubectl-rolis"), append([]string{"--context", E.Context}, args...)...)
}

func mustPlugin(limit time.Duration, args ...string) string {
	GinkgoHelper()
	out, err := plugin(limit, args...)
	Expect(err).NotTo(HaveOccurred(), "kubectl rolis %s: %s", strings.Join(args, " "), out)
	return out
}

// The "Day 2" guide of docs/operations.md, step by step, with the plugin
// only: status, bench, cli, promote under load (nothing acknowledged
// lost), kubectl scale 3→5→3, fence and unfence, restart, report.
var _ = Describe("Day 2 with kubectl rolis", Ordered, Label("plugin", "day2"), func() {
	var d *database
	BeforeAll(func() {
		// 5 members must fit beside the control plane, cert-manager and
		// Prometheus on the one node of a 2-core machine (docs/e2e.md): the
		// sample's 250m each left the fourth and fifth Pending there.
		d = loadedSample("e2e-day2", 61, func(spec map[string]any) {
			spec["resources"].(map[string]any)["requests"].(map[string]any)["cpu"] = "100m"
		})
	})

	It("status shows the members with their lag in seconds", func() {
		out := mustPlugin(time.Minute, "-n", d.ns, "status", d.name)
		Expect(out).To(ContainSubstring(d.cluster().Status.Leader))
		Expect(out).To(MatchRegexp(`\d+\.\d{3}s`), "lags in seconds")
		var r struct {
			Leader  string `json:"leader"`
			Members []struct {
				Name       string   `json:"name"`
				LagSeconds *float64 `json:"lagSeconds"`
			} `json:"members"`
			Volumes []struct{ Name string } `json:"volumes"`
		}
		// A member's lag is known once the operator has compared it with
		// the leader's watermark of the same epoch (right after the sample
		// became Ready, one may not be yet).
		Eventually(func(g Gomega) {
			r.Members = nil
			g.Expect(json.Unmarshal([]byte(mustPlugin(time.Minute, "-n", d.ns, "status", d.name, "-o", "json")), &r)).To(Succeed())
			g.Expect(r.Members).To(HaveLen(len(d.pods)))
			for _, m := range r.Members {
				g.Expect(m.LagSeconds).NotTo(BeNil(), m.Name)
				g.Expect(*m.LagSeconds).To(BeNumerically("<", 60), m.Name)
			}
		}, time.Minute, 2*time.Second).Should(Succeed())
		Expect(r.Volumes).To(HaveLen(len(d.pods)))
	})

	It("bench runs a Job against the client Service, prints the summary and deletes the Job", func() {
		out := mustPlugin(5*time.Minute, "-n", d.ns, "bench", d.name, "--seconds=5", "--", "--keys=10000")
		Expect(out).To(ContainSubstring("throughput"))
		Expect(out).To(MatchRegexp(`job/\S+ deleted`))
		Eventually(func() string {
			return must(30*time.Second, "-n", d.ns, "get", "jobs", "-l", "app.kubernetes.io/name=rolis-bench", "-o", "name")
		}).WithTimeout(time.Minute).Should(BeEmpty())
	})

	It("cli runs rolisctl through a port-forward to the leader", func() {
		out := mustPlugin(2*time.Minute, "-n", d.ns, "cli", d.name, "--", "status")
		Expect(out).To(ContainSubstring("leader"), "rolisctl status through the admin port of the leader")
		mustPlugin(time.Minute, "-n", d.ns, "cli", d.name, "--", "put", "day2-key", "day2-value")
		Expect(mustPlugin(time.Minute, "-n", d.ns, "cli", d.name, "--", "get", "day2-key")).To(ContainSubstring("day2-value"))
	})

	It("promote moves leadership to another member under load, losing no acknowledged write", func() {
		c := d.cluster()
		target := ""
		for _, p := range d.pods {
			if p != c.Status.Leader {
				target = p
				break
			}
		}
		mustPlugin(time.Minute, "-n", d.ns, "promote", d.name, target)
		c = d.waitNewLeader(c.Status.Epoch, E.FailoverBound)
		Expect(c.Status.Leader).To(Equal(target))
		Expect(c.Status.LastSwitchover).NotTo(BeNil())
		Expect(c.Status.LastSwitchover.To).To(Equal(target))
		Expect(c.Annotations).NotTo(HaveKey(dbv1.AnnotationPromote))
		d.writesFlowing(30 * time.Second)
		// The load runs on; the restart spec's ledger check covers every
		// write acknowledged across this switchover too.
	})

	It("kubectl scale goes to 5 members and back to 3", func() {
		epoch := d.cluster().Status.Epoch
		for _, n := range []int{5, 3} {
			must(time.Minute, "-n", d.ns, "scale", "roliscluster/"+d.name, fmt.Sprintf("--replicas=%d", n))
			c := d.waitSettled(int32(n), 8*time.Minute, func(g Gomega, pods map[string]corev1.Pod) { g.Expect(pods).To(HaveLen(n)) })
			pods := podNames(d.name, n)
			for _, p := range pods {
				if !slices.Contains(d.pods, p) {
					d.fw.add(p)
				}
			}
			for _, p := range d.pods {
				if !slices.Contains(pods, p) {
					d.fw.remove(p)
				}
			}
			d.pods = pods
			GinkgoWriter.Printf("%d members: %s\n", n, describe(c))
		}
		Expect(d.cluster().Status.Epoch).To(Equal(epoch), "scaling must not fail over")
		d.writesFlowing(30 * time.Second)
	})

	It("fence takes a follower out of the voting configuration; unfence brings it back", func() {
		c := d.cluster()
		follower := ""
		for _, p := range d.pods {
			if p != c.Status.Leader {
				follower = p
			}
		}
		mustPlugin(time.Minute, "-n", d.ns, "fence", d.name, follower)
		waitCluster(d.ns, d.name, 3*time.Minute, time.Second, func(g Gomega, c *dbv1.RolisCluster) {
			g.Expect(c.Status.FencedMembers).To(HaveLen(1))
			st, err := d.status(c.Status.Leader)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.GetMembers()).To(HaveLen(len(d.pods) - 1))
		})
		Expect(must(30*time.Second, "-n", d.ns, "get", "pod", follower, "-o", "jsonpath={.metadata.labels.role}")).To(Equal("fenced"))
		var others []string
		for _, p := range d.pods {
			if p != follower {
				others = append(others, p)
			}
		}
		Eventually(d.readEndpoints).WithTimeout(time.Minute).WithPolling(time.Second).Should(ConsistOf(others),
			"the read Service sends no reads to the fenced member")
		d.writesFlowing(30 * time.Second)
		mustPlugin(time.Minute, "-n", d.ns, "unfence", d.name, follower)
		waitCluster(d.ns, d.name, 3*time.Minute, time.Second, func(g Gomega, c *dbv1.RolisCluster) {
			g.Expect(c.Status.FencedMembers).To(BeEmpty())
			st, err := d.status(c.Status.Leader)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.GetMembers()).To(HaveLen(len(d.pods)))
		})
		waitReady(d.ns, d.name, 3*time.Minute)
		Eventually(d.readEndpoints).WithTimeout(time.Minute).WithPolling(time.Second).Should(ConsistOf(d.pods),
			"the unfenced member takes reads again")
	})

	It("restart restarts every member, followers first, the old leader after a switchover", func() {
		before := d.cluster()
		uids := map[string]string{}
		for _, p := range d.pods {
			uids[p] = podUID(d.ns, p)
		}
		mustPlugin(time.Minute, "-n", d.ns, "restart", d.name)
		for _, p := range d.pods {
			waitPodReplaced(d.ns, p, uids[p], 8*time.Minute)
		}
		c := waitReady(d.ns, d.name, 5*time.Minute)
		Expect(c.Status.Leader).NotTo(Equal(before.Status.Leader), "the old leader was switched over before its restart")
		Expect(c.Status.LastSwitchover).NotTo(BeNil())
		Expect(c.Status.LastSwitchover.From).To(Equal(before.Status.Leader))
		for _, p := range d.pods {
			d.fw.restart(p)
		}
		d.writesFlowing(30 * time.Second)
		By("every write acknowledged since the start (promote, scale, fence, restart) is on the members")
		d.verify()
	})

	It("report writes a bundle with objects, events, logs and metrics", func() {
		file := filepath.Join(GinkgoT().TempDir(), "report.tar.gz")
		mustPlugin(3*time.Minute, "-n", d.ns, "report", d.name, "-f", file, "--operator-namespace", operatorNS)
		names := tarNames(file)
		for _, want := range []string{"status.json", "objects/roliscluster.yaml", "events.yaml"} {
			Expect(names).To(ContainElement("rolis-report-" + d.name + "/" + want))
		}
		for _, p := range d.pods {
			Expect(names).To(ContainElement(fmt.Sprintf("rolis-report-%s/logs/%s.log", d.name, p)))
			Expect(names).To(ContainElement(fmt.Sprintf("rolis-report-%s/metrics/%s.prom", d.name, p)))
		}
		Expect(slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "/logs/operator-") })).To(BeTrue(), "the operator's log")
	})
})

func tarNames(path string) []string {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close() //nolint:errcheck
	gz, err := gzip.NewReader(f)
	Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		Expect(err).NotTo(HaveOccurred())
		names = append(names, h.Name)
	}
}
