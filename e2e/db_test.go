package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/internal/ledger"
	"github.com/rolisdb/rolis/pkg/client"
)

// database is one RolisCluster under test, reached through port-forwards.
type database struct {
	ns, name string
	pods     []string
	fw       *forwards
	w        *ledger.Workload
	avail    *availability
	// failovers measured by loseLeader, in order.
	failovers []failover
	// tlsFiles (CAFile, CertFile, KeyFile), once set, are presented by the
	// checks that read the members (status, verify): a cluster moved to
	// TLS refuses plaintext.
	tlsFiles client.Config
}

// dial is a client configuration for endpoints with the checks' TLS files.
func (d *database) dial(endpoints ...string) client.Config {
	return client.Config{Endpoints: endpoints, CAFile: d.tlsFiles.CAFile, CertFile: d.tlsFiles.CertFile,
		KeyFile: d.tlsFiles.KeyFile}
}

// createSample applies config/samples in a new namespace (changes edit its
// spec: applySample), waits until the cluster is Ready and forwards its
// members' ports.
func createSample(prefix string, changes ...func(spec map[string]any)) *database {
	GinkgoHelper()
	ns := newNamespace(prefix)
	start := time.Now()
	applySample(ns, changes...)
	c := waitReady(ns, sampleName, 5*time.Minute)
	GinkgoWriter.Printf("%s Ready after %v: %s\n", sampleName, time.Since(start).Round(time.Second), describe(c))
	d := &database{ns: ns, name: sampleName, pods: podNames(sampleName, int(c.Spec.Replicas))}
	d.fw = forward(ns, d.pods)
	return d
}

func (d *database) cluster() *dbv1.RolisCluster {
	GinkgoHelper()
	c, err := getCluster(d.ns, d.name)
	Expect(err).NotTo(HaveOccurred())
	return c
}

func (d *database) clientConfig() client.Config {
	// A not-leader reply names the leader by its cluster DNS name, which
	// fails to resolve here: the client then tries the next endpoint.
	return client.Config{Endpoints: d.fw.endpoints(), MaxRedirects: 2 * len(d.pods)}
}

// status asks one member for its status through its admin port.
func (d *database) status(pod string) (*rolisv1.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	a, err := client.NewAdmin(ctx, d.dial(d.fw.adminAddr(pod)))
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return a.Status(ctx, "")
}

// startLoad writes the accounts and starts the workload and the
// availability checker.
func (d *database) startLoad(seed uint64) {
	GinkgoHelper()
	d.w = ledger.New(GinkgoT(), d.clientConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d.w.Setup(ctx)
	d.w.Start(2, 1, 2, seed)
	d.avail = startAvailability(d.w.NewClient())
	DeferCleanup(d.stopLoad)
}

func (d *database) stopLoad() {
	if d.avail != nil {
		d.avail.stop()
		n, failed, longest := d.avail.report()
		GinkgoWriter.Printf("availability: %d probes every 250ms, %d failed, longest gap between successful writes %v\n",
			n, failed, longest.Round(time.Millisecond))
		d.avail = nil
	}
	if d.w != nil {
		d.w.Stop()
	}
}

// writesFlowing waits until the workload has new acknowledgements.
func (d *database) writesFlowing(limit time.Duration) {
	GinkgoHelper()
	before := d.w.Acked()
	Eventually(d.w.Acked).WithTimeout(limit).WithPolling(100 * time.Millisecond).Should(BeNumerically(">", before+10))
}

// waitNewLeader waits until the operator reports a leader of a newer epoch
// than epoch; it returns the cluster.
func (d *database) waitNewLeader(epoch int64, limit time.Duration) *dbv1.RolisCluster {
	GinkgoHelper()
	return waitCluster(d.ns, d.name, limit, 200*time.Millisecond, func(g Gomega, c *dbv1.RolisCluster) {
		g.Expect(c.Status.Epoch).To(BeNumerically(">", epoch))
		g.Expect(c.Status.Leader).NotTo(BeEmpty())
	})
}

// waitCaughtUp waits until every member but the leader is a follower whose
// replayed key reached the leader's watermark as it was when the wait began.
func (d *database) waitCaughtUp(leader string, limit time.Duration) {
	GinkgoHelper()
	var target *rolisv1.LogKey
	Eventually(func(g Gomega) {
		st, err := d.status(leader)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.GetRole()).To(Equal(rolisv1.Role_LEADER))
		target = st.GetWatermark()
	}).WithTimeout(limit).WithPolling(200 * time.Millisecond).Should(Succeed())
	Eventually(func(g Gomega) {
		for _, p := range d.pods {
			if p == leader {
				continue
			}
			st, err := d.status(p)
			g.Expect(err).NotTo(HaveOccurred(), p)
			g.Expect(st.GetRole()).To(Equal(rolisv1.Role_FOLLOWER), p)
			g.Expect(client.CompareLogKey(st.GetReplayed(), target)).To(BeNumerically(">=", 0), "%s replayed %v, target %v",
				p, st.GetReplayed(), target)
		}
	}).WithTimeout(limit).WithPolling(250 * time.Millisecond).Should(Succeed())
	time.Sleep(200 * time.Millisecond) // read-only snapshots trail replay by a few engine epochs
}

// verify stops the load and checks the invariants on every member: every
// acknowledged transaction present, the bank total unchanged, single-key
// histories linearizable. The history is saved under the artifacts folder.
func (d *database) verify() {
	GinkgoHelper()
	d.stopLoad()
	leader := d.cluster().Status.Leader
	Expect(leader).NotTo(BeEmpty())
	d.waitCaughtUp(leader, 2*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var snaps []ledger.Snapshot
	for _, p := range d.pods {
		isLeader := p == leader
		call := d.w.Now()
		state, err := ledger.Dump(ctx, d.dial(d.fw.clientAddr(p)), isLeader)
		Expect(err).NotTo(HaveOccurred(), "reading %s", p)
		role := "follower"
		if isLeader {
			role = "leader"
		}
		snaps = append(snaps, ledger.Snapshot{What: fmt.Sprintf("%s (%s)", p, role), State: state, Leader: isLeader,
			Call: call, Return: d.w.Now()})
	}
	d.saveHistory()
	GinkgoWriter.Println("ledger:", d.w.Check(snaps))
}

// saveHistory writes every operation of the workload (the log of
// acknowledged transactions) under the artifacts folder.
func (d *database) saveHistory() {
	name := fileName(CurrentSpecReport().LeafNodeText)
	dir := filepath.Join(E.Artifacts, "histories")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	p := filepath.Join(dir, time.Now().Format("150405")+"-"+name+".txt")
	f, err := os.Create(p)
	if err != nil {
		return
	}
	defer f.Close()
	if d.w.WriteHistory(f) == nil {
		GinkgoWriter.Printf("history of the workload (call ms, return ms, operation): %s\n", p)
	}
}

// readEndpoints lists the ready pods of the read Service's EndpointSlices
// (the EndpointSlice controller's view of its selector).
func (d *database) readEndpoints() []string {
	GinkgoHelper()
	out := must(30*time.Second, "-n", d.ns, "get", "endpointslices", "-l", "kubernetes.io/service-name="+d.name+"-read",
		"-o", `jsonpath={range .items[*].endpoints[*]}{.targetRef.name} {.conditions.ready}{"\n"}{end}`)
	pods := []string{}
	for _, line := range strings.Split(out, "\n") {
		if pod, ready, ok := strings.Cut(strings.TrimSpace(line), " "); ok && ready == "true" {
			pods = append(pods, pod)
		}
	}
	return pods
}
