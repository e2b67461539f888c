package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/rolisdb/rolis/controllers/specs"
)

// spread returns the node of every member and requires them to differ (a
// fault of one node must take one member only, or the scenario means
// something else).
func (d *database) spread() map[string]string {
	GinkgoHelper()
	nodes, seen := map[string]string{}, map[string]string{}
	for _, p := range d.pods {
		n := podNode(d.ns, p)
		Expect(seen).NotTo(HaveKey(n), "%s and %s both run on %s", seen[n], p, n)
		seen[n], nodes[p] = p, n
	}
	return nodes
}

// rolisctlOn copies rolisctl into a node's container, to reach pods from
// inside a network cut; it returns its path there (not under /tmp, a tmpfs
// that docker cp does not see).
func rolisctlOn(node string) string {
	GinkgoHelper()
	bin := getenv("ROLISCTL_BIN", filepath.Join(E.Root, "bin/rolisctl"))
	const dst = "/usr/local/bin/rolisctl-e2e"
	DeferCleanup(run, 30*time.Second, "docker", "exec", node, "rm", "-f", dst)
	out, err := run(time.Minute, "docker", "cp", bin, node+":"+dst)
	Expect(err).NotTo(HaveOccurred(), out)
	return dst
}

// putOn writes key through rolisctl on node, to the member at ip.
func putOn(node, rolisctl, ip, key string) (string, error) {
	return run(30*time.Second, "docker", "exec", node, rolisctl, "--endpoint",
		fmt.Sprintf("%s:%d", ip, specs.ClientPort), "--timeout", "3s", "put", key, "1")
}

var _ = Describe("Network partition", func() {
	It("leader's node cut off the network, then healed: failover, the old leader acknowledges nothing and rejoins",
		Label("chaos", "partition"), func() {
			d := loadedSample("e2e-partition", 5)
			nodes := d.spread()
			var node, ip, rolisctl string
			old := d.loseLeader("cutting the network of the leader's node", func(pod string) {
				node = nodes[pod]
				ip = must(20*time.Second, "-n", d.ns, "get", "pod", pod, "-o", "jsonpath={.status.podIP}")
				rolisctl = rolisctlOn(node)
				// The tool works from there: the leader takes a write before the cut.
				out, err := putOn(node, rolisctl, ip, "fence/before-cut")
				Expect(err).NotTo(HaveOccurred(), "put on the leader from its node before the cut: %s", out)
				cutNode(node)
			})

			By("writing to the cut-off old leader " + old + " from its own node: it must acknowledge nothing")
			fenced := []string{}
			for i := range 3 {
				key := fmt.Sprintf("fence/%d", i)
				out, err := putOn(node, rolisctl, ip, key)
				GinkgoWriter.Printf("put %s on the old leader: %v %s\n", key, err, out)
				Expect(err).To(HaveOccurred(), "the cut-off old leader acknowledged %s after the new epoch: %s", key, out)
				// rolisctl ran and failed: 1 to 5 (docs/client.md, "Exit codes"; a
				// shell that cannot run it says 126 or 127).
				Expect(err.Error()).To(MatchRegexp(`exit status [1-5]$`), "rolisctl did not run: %s", out)
				fenced = append(fenced, key)
			}

			By("healing the network of " + node)
			healed := time.Now()
			healNode(node)
			d.rejoin(old, "")
			GinkgoWriter.Printf("%s is a ready member again %v after the heal\n", old, time.Since(healed).Round(time.Millisecond))
			Expect(d.cluster().Status.Leader).NotTo(Equal(old))
			d.verify()

			By("nothing the old leader took during the cut survives")
			cl := d.w.NewClient()
			for _, key := range fenced {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, found, err := cl.Get(ctx, []byte(key))
				cancel()
				Expect(err).NotTo(HaveOccurred())
				Expect(found).To(BeFalse(), "%s, written to the cut-off old leader, is in the database", key)
			}
		})
})
