/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// rolisdBinary finds a built rolisd: $ROLISD (or $ROLISD_BIN, as
// internal/testserver reads it), else bin/rolisd, else the CMake build
// folder; "" when there is none. A variable pointing nowhere is an error.
func rolisdBinary() string {
	for _, env := range []string{"ROLISD", "ROLISD_BIN"} {
		if p := os.Getenv(env); p != "" {
			if _, err := os.Stat(p); err != nil {
				Fail(fmt.Sprintf("%s=%s: %v", env, p, err))
			}
			return p
		}
	}
	for _, p := range []string{filepath.Join("..", "bin", "rolisd"), filepath.Join("..", "build", "engine", "bin", "rolisd")} {
		if _, err := os.Stat(p); err == nil {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	return ""
}

// memberArgs are the flags of a member started as the StatefulSet starts it
// (--election=none --decider=operator: the operator elects and decides),
// with short timers for the tests, then extra.
func memberArgs(extra ...string) []string {
	return append([]string{"--election=none", "--decider=operator", "--worker-threads=2", "--batch-timeout=1ms", "--epoch-period-ms=10",
		"--shutdown-grace=1s", "--txn-idle-timeout=2s"}, extra...)
}

// highestEpoch is the newest epoch any member has led, promised or decided.
func highestEpoch(members []*testserver.Member) uint64 {
	GinkgoHelper()
	top := uint64(0)
	for _, m := range members {
		st, err := memberStatus(m.AdminAddr)
		Expect(err).NotTo(HaveOccurred())
		top = max(top, st.GetEpoch(), st.GetPromisedEpoch(), st.GetDecided().GetEpoch())
	}
	return top
}

// startLedgerLoad sets up the ledger's accounts through endpoints and starts
// its load (3 transferers, a reader, 2 inserters; seed varies the keys and
// amounts); the load stops when the spec ends, if not before.
func startLedgerLoad(ctx context.Context, endpoints []string, seed uint64) *ledger.Workload {
	GinkgoHelper()
	w := ledger.New(GinkgoTB(), client.Config{Endpoints: endpoints})
	setupCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w.Setup(setupCtx)
	w.Start(3, 1, 2, seed)
	DeferCleanup(w.Stop)
	return w
}

// memberStatus asks one rolisd for its admin Status.
func memberStatus(addr string) (*rolisv1.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a, err := client.NewAdmin(ctx, client.Config{Endpoints: []string{addr}})
	if err != nil {
		return nil, err
	}
	defer a.Close() //nolint:errcheck
	return a.Status(ctx, "")
}

// servingLeader returns the decided leader's id and epoch once the cluster
// is Available (the leader serves in the decided epoch).
func servingLeader(ctx context.Context, c *dbv1.RolisCluster) (uint32, uint64) {
	GinkgoHelper()
	Eventually(condition(ctx, c, dbv1.ConditionAvailable), "60s").Should(HavePrefix("True/" + ReasonLeaderServing))
	rec := epochRecord(ctx, c.Namespace)()
	return rec.GetLeaderId(), rec.GetEpoch()
}

// rolesWith is the role label of every member pod with id leading.
func rolesWith(c *dbv1.RolisCluster, id uint32) map[string]string {
	out := map[string]string{}
	for i := int32(1); i <= c.DesiredReplicas(); i++ {
		out[specs.PodName(c, i)] = "follower"
	}
	out[specs.PodName(c, int32(id))] = "leader"
	return out
}

// waitFailedOver waits until the operator decided and opened an epoch above
// `above` with a leader other than `old`, and checks what it recorded.
func waitFailedOver(ctx context.Context, c *dbv1.RolisCluster, procs *testserver.Cluster, old uint32, above uint64) (uint32, uint64) {
	GinkgoHelper()
	Eventually(func() uint64 { return epochRecord(ctx, c.Namespace)().GetEpoch() }, "60s").Should(BeNumerically(">", above))
	id, epoch := servingLeader(ctx, c)
	Expect(id).NotTo(Equal(old))
	Eventually(func() string { return getCluster(ctx, c).Status.Leader }).Should(Equal(specs.PodName(c, int32(id))))
	Eventually(func() int64 { return getCluster(ctx, c).Status.Epoch }).Should(Equal(int64(epoch)))
	Eventually(podRoles(ctx, c)).Should(Equal(rolesWith(c, id)), "role=leader moved to the new leader")
	Eventually(condition(ctx, c, dbv1.ConditionFailingOver)).Should(HavePrefix("False/"))
	st, err := memberStatus(procs.Member(int(id)).AdminAddr)
	Expect(err).NotTo(HaveOccurred())
	Expect(st.GetRole()).To(Equal(rolisv1.Role_LEADER))
	Expect(st.GetEpoch()).To(Equal(epoch))
	return id, epoch
}

// The test the replication issue and the operator issue share: three real
// rolisd processes on loopback (started as the StatefulSet starts them:
// --id, --peers, --election=none), mapped to hand-made pods through the
// test's resolver, with the operator as the only one that elects. A client
// load (internal/ledger: bank transfers, all-account reads, unique inserts)
// records every acknowledged transaction; after each fault the new leader
// must hold all of them, with the bank total unchanged and every key's
// history linearizable.
var _ = Describe("Leadership against real rolisd processes", Ordered, Label("rolisd"), func() {
	// Noticing a paused leader takes a failed heartbeat and a failed probe
	// (1 s each) and a status write: ~2.3 s here, over 3 s on a loaded VM.
	// The timeout leaves room for that, so that the short pause below
	// stays shorter than it.
	const failoverTimeout = 5 * time.Second
	var (
		ctx   context.Context
		ns    string
		c     *dbv1.RolisCluster
		procs *testserver.Cluster
		w     *ledger.Workload
	)

	BeforeAll(func() {
		bin := rolisdBinary()
		if bin == "" {
			Skip("no rolisd binary (set ROLISD, or run `make engine` to build bin/rolisd); the state machine runs against the in-process fakes of leadership_test.go")
		}
		ctx = context.Background()
		procs = testserver.Start(GinkgoTB(), testserver.Options{
			Members: 3, Binary: bin, Args: memberArgs(),
		})
		ns = newNamespace(ctx)
		c = newCluster(ns, "db", 3)
		// The processes run without --data-dir (durability memory); the
		// spec says so, or the operator reports DurabilityMismatch.
		c.Spec.Durability = dbv1.DurabilityMemory
		c.Spec.Failover.Timeout = &metav1.Duration{Duration: failoverTimeout}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		startPods(ctx, c, []int32{1, 2, 3}, "rev1", func(id int32) string { return procs.Member(int(id)).AdminAddr })
	})

	leader := func() (uint32, uint64) { GinkgoHelper(); return servingLeader(ctx, c) }
	pod := func(id uint32) string { return fmt.Sprintf("db-%d", id) }
	rolesWithLeader := func(id uint32) map[string]string { return rolesWith(c, id) }
	failedOver := func(old uint32, above uint64) (uint32, uint64) {
		GinkgoHelper()
		return waitFailedOver(ctx, c, procs, old, above)
	}
	// outage waits for the first write acknowledged after the fault and
	// reports the gap; the caller says what bound the path it expects has.
	outage := func(what string, fault time.Time) time.Duration {
		GinkgoHelper()
		var gap time.Duration
		Eventually(func() bool {
			var ok bool
			gap, ok = w.FirstAckAfter(fault)
			return ok
		}, "60s").Should(BeTrue(), "writes resume after %s", what)
		AddReportEntry(what, fmt.Sprintf("first acknowledged write %v after the fault (failover.timeout %v)", gap.Round(time.Millisecond), failoverTimeout), ReportEntryVisibilityAlways)
		fmt.Fprintf(GinkgoWriter, "%s: first acknowledged write %v after the fault\n", what, gap)
		Expect(gap).To(BeNumerically("<", failoverTimeout+30*time.Second))
		return gap
	}
	// verify reads the leader's state (a linearizable scan) and every other
	// running member's but leaving's (members shutting down), once it
	// replayed as many keys, and checks the ledger on all of them. It returns
	// the leader's state.
	verify := func(id uint32, leaving ...uint32) map[string]string {
		GinkgoHelper()
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		call := w.Now()
		state, err := ledger.Dump(rctx, client.Config{Endpoints: []string{procs.Member(int(id)).ClientAddr}}, true)
		Expect(err).NotTo(HaveOccurred())
		snaps := []ledger.Snapshot{{What: fmt.Sprintf("leader %s", pod(id)), State: state, Leader: true, Call: call, Return: w.Now()}}
		for _, m := range procs.Members {
			if uint32(m.ID) == id || !m.Running() || slices.Contains(leaving, uint32(m.ID)) {
				continue
			}
			var follower map[string]string
			var fcall int64
			// A follower replays up to the watermark: wait until it has
			// replayed what the leader's read saw (Check then compares
			// every key).
			Eventually(func() int {
				fcall = w.Now()
				follower, err = ledger.Dump(rctx, client.Config{Endpoints: []string{m.ClientAddr}}, false)
				if err != nil {
					return -1
				}
				return len(follower)
			}, "30s").Should(Equal(len(state)), "member %d replays what the leader holds", m.ID)
			snaps = append(snaps, ledger.Snapshot{What: fmt.Sprintf("follower %s", pod(uint32(m.ID))), State: follower,
				Call: fcall, Return: w.Now()})
		}
		fmt.Fprintf(GinkgoWriter, "ledger on %d members (leader %s): %s\n", len(snaps), pod(id), w.Check(snaps))
		return state
	}

	It("elects the first leader through the admin API, labels it and tells the followers", func() {
		id, epoch := leader()
		Expect(epoch).To(BeNumerically(">=", 1))
		Eventually(func() string { return getCluster(ctx, c).Status.Leader }).Should(Equal(pod(id)))
		Eventually(podRoles(ctx, c)).Should(Equal(rolesWithLeader(id)))
		Eventually(condition(ctx, c, dbv1.ConditionReady)).Should(HavePrefix("True/"))
		Expect(eventReasons(ctx, c)()).To(ContainElements(ReasonPromoting, "FailoverPrepare", "FailoverDecide",
			"FailoverOpen", "FailoverAnnounce", ReasonLeaderLabelMoved, ReasonPromoted))

		By("every member knows the decision, its leader and where the leader serves clients")
		for _, m := range procs.Members {
			Eventually(func() string {
				st, err := memberStatus(m.AdminAddr)
				if err != nil {
					return err.Error()
				}
				return fmt.Sprintf("decided %d leader %d at %s", st.GetDecided().GetEpoch(), st.GetLeaderId(), st.GetLeaderAddress())
			}).Should(Equal(fmt.Sprintf("decided %d leader %d at %s", epoch, id, procs.Member(int(id)).ClientAddr)))
		}
		st := getCluster(ctx, c).Status
		Expect(st.Watermark).NotTo(BeNil())
		Expect(st.Members).To(HaveLen(3))
	})

	It("does not fail over a leader paused for less than failover.timeout", func() {
		id, epoch := leader()
		m := procs.Member(int(id))
		Expect(m.Pause()).To(Succeed())
		paused := time.Now()
		// Resume as soon as the operator noticed: within the timeout.
		Eventually(condition(ctx, c, dbv1.ConditionFailingOver), failoverTimeout).Should(HavePrefix("True/" + ReasonLeaderUnhealthy))
		Expect(m.Resume()).To(Succeed())
		AddReportEntry("paused leader noticed", time.Since(paused).Round(time.Millisecond).String(), ReportEntryVisibilityAlways)
		Eventually(condition(ctx, c, dbv1.ConditionFailingOver)).Should(HavePrefix("False/"))
		Eventually(condition(ctx, c, dbv1.ConditionAvailable)).Should(HavePrefix("True/" + ReasonLeaderServing))
		Consistently(func() uint64 { return epochRecord(ctx, ns)().GetEpoch() }, failoverTimeout).Should(Equal(epoch))
		Expect(podRoles(ctx, c)()).To(Equal(rolesWithLeader(id)))
	})

	It("fails over a leader killed with SIGKILL under load, losing no acknowledged transaction", func() {
		old, epoch := leader()
		w = startLedgerLoad(ctx, procs.ClientAddrs(), 11)
		Eventually(w.Acked, "10s").Should(BeNumerically(">", 20), "the load runs through the elected leader")

		killed := time.Now()
		_, err := procs.Member(int(old)).Kill()
		Expect(err).NotTo(HaveOccurred())
		id, next := failedOver(old, epoch)
		outage("failover after SIGKILL of the leader", killed)
		Expect(epochRecord(ctx, ns)().GetCut()).To(HaveKey(epoch), "the decided record keeps what survives of epoch %d", epoch)
		// The fast path: nothing listens on the dead leader's admin port,
		// a fact, so the operator does not wait failover.timeout.
		Expect(notesSince(ctx, c, ReasonLeaderGone, killed)).To(ContainElement(And(ContainSubstring(pod(old)), ContainSubstring("connection refused"))))
		fmt.Fprintf(GinkgoWriter, "member %d killed in epoch %d; member %d leads epoch %d\n", old, epoch, id, next)

		acked := w.Acked()
		Eventually(w.Acked, "10s").Should(BeNumerically(">", acked+20), "the load goes on with the new leader")
		w.Stop()
		verify(id)
	})

	It("fences a leader paused with SIGSTOP past failover.timeout: after it resumes it acknowledges nothing", func() {
		var dead uint32
		for _, m := range procs.Members {
			if !m.Running() {
				Expect(m.Restart(30*time.Second)).To(Succeed(), "the member killed before restarts empty")
				dead = uint32(m.ID)
			}
		}
		Expect(dead).NotTo(BeZero(), "the previous spec killed a member")
		By("the restarted member catches up by state transfer and follows")
		Eventually(func() string {
			for _, m := range getCluster(ctx, c).Status.Members {
				if m.Name == pod(dead) {
					return m.Role
				}
			}
			return "absent"
		}, "60s").Should(Equal("Follower"))

		old, epoch := leader()
		w.Start(3, 1, 2, 23)
		acked := w.Acked()
		Eventually(w.Acked, "10s").Should(BeNumerically(">", acked+20))
		// A client that stays on the old leader (no redirects).
		pinned, err := client.New(ctx, client.Config{Endpoints: []string{procs.Member(int(old)).ClientAddr}, MaxRedirects: -1})
		Expect(err).NotTo(HaveOccurred())
		defer pinned.Close() //nolint:errcheck

		paused := time.Now()
		Expect(procs.Member(int(old)).Pause()).To(Succeed())
		id, next := failedOver(old, epoch)
		Expect(outage("failover after SIGSTOP of the leader", paused)).To(BeNumerically(">=", failoverTimeout),
			"a silent leader is a suspicion: no failover before failover.timeout")
		Expect(notesSince(ctx, c, ReasonLeaderGone, paused)).To(BeEmpty())

		By("the old leader resumes: the new epoch fences it")
		Expect(procs.Member(int(old)).Resume()).To(Succeed())
		var fenced []string
		for i := 0; i < 20; i++ {
			key := fmt.Sprintf("fence/%02d", i)
			err := w.Insert(pinned, key)
			Expect(err).To(HaveOccurred(), "the deposed leader acknowledged %s", key)
			fenced = append(fenced, key)
			time.Sleep(50 * time.Millisecond)
		}
		Eventually(func() rolisv1.Role {
			st, err := memberStatus(procs.Member(int(old)).AdminAddr)
			if err != nil {
				return rolisv1.Role_ROLE_UNSPECIFIED
			}
			return st.GetRole()
		}, "30s").Should(Or(Equal(rolisv1.Role_FOLLOWER), Equal(rolisv1.Role_CATCHING_UP)), "the old leader steps down")
		Expect(epochRecord(ctx, ns)().GetLeaderId()).To(Equal(id), "no further failover: the resumed member is not the leader")
		Expect(podRoles(ctx, c)()).To(Equal(rolesWithLeader(id)))

		acked = w.Acked()
		Eventually(w.Acked, "10s").Should(BeNumerically(">", acked+20), "the load goes on with the new leader")
		w.Stop()
		state := verify(id)
		for _, k := range fenced {
			Expect(state).NotTo(HaveKey(k), "a write sent to the fenced leader reached the new epoch")
		}
		fmt.Fprintf(GinkgoWriter, "member %d paused in epoch %d; member %d leads epoch %d\n", old, epoch, id, next)
		Expect(strings.Join(eventNotes(ctx, c, ReasonPromoted), "\n")).To(ContainSubstring(fmt.Sprintf("leads epoch %d", next)))
	})

	// envtest has no kubelet: the test plays it. A pod deleted with a grace
	// period keeps its object (here held by a finalizer) with a
	// deletionTimestamp while the kubelet sends SIGTERM and rolisd runs out
	// its --shutdown-grace; then the object goes and the StatefulSet makes
	// a new pod, whose rolisd starts empty.
	It("switches over at once from a leader whose pod is being deleted, losing no acknowledged transaction", func() {
		old, epoch := leader()
		w.Start(3, 1, 2, 29)
		acked := w.Acked()
		Eventually(w.Acked, "10s").Should(BeNumerically(">", acked+20))

		deleted := deleteMemberPod(ctx, c, procs.Member(int(old)))
		id, next := failedOver(old, epoch)
		// The old leader acknowledges for a moment after the deletion, so
		// the first write after it says little: the longest stretch
		// without any acknowledgement is the outage.
		outage("switchover from a leader whose pod is being deleted", deleted)
		Expect(notesSince(ctx, c, ReasonLeaderLeaving, deleted)).To(ContainElement(ContainSubstring(pod(old))),
			"a pod being deleted is a fact: switch over without waiting failover.timeout")
		Expect(notesSince(ctx, c, ReasonLeaderUnhealthy, deleted)).To(BeEmpty())

		acked = w.Acked()
		Eventually(w.Acked, "10s").Should(BeNumerically(">", acked+20), "the load goes on with the new leader")
		gap := w.LongestWriteGap(deleted, time.Now())
		AddReportEntry("switchover outage", fmt.Sprintf("longest stretch without an acknowledged write %v", gap.Round(time.Millisecond)), ReportEntryVisibilityAlways)
		Expect(gap).To(BeNumerically("<", failoverTimeout+30*time.Second))
		w.Stop()
		verify(id, old) // the old leader is shutting down: its pod is being deleted
		recreateMember(ctx, c, procs.Member(int(old)))
		fmt.Fprintf(GinkgoWriter, "member %d deleted in epoch %d; member %d leads epoch %d\n", old, epoch, id, next)
	})

	// The test plays an operator that died right after its compare-and-set:
	// PrepareFailover on a follower, the record decided in the ConfigMap,
	// no OpenEpoch. The running operator must open exactly that record (the
	// candidate compares it with what it proposed, so the record must come
	// back from the ConfigMap unchanged) and decide nothing new.
	It("opens a decided record whose candidate an earlier operator left unopened", func() {
		old, _ := leader()
		By("the member recreated by the previous spec catches up by state transfer and follows")
		Eventually(func() []string {
			var roles []string
			for _, m := range procs.Members {
				st, err := memberStatus(m.AdminAddr)
				if err != nil {
					return []string{err.Error()}
				}
				roles = append(roles, st.GetRole().String())
			}
			return roles
		}, "60s").Should(ConsistOf("LEADER", "FOLLOWER", "FOLLOWER"))
		var cand *testserver.Member
		for _, m := range procs.Members {
			st, err := memberStatus(m.AdminAddr)
			Expect(err).NotTo(HaveOccurred())
			if uint32(m.ID) != old && st.GetRole() == rolisv1.Role_FOLLOWER && cand == nil {
				cand = m
			}
		}
		Expect(cand).NotTo(BeNil(), "a caught-up follower")
		store := &leadership.ConfigMapStore{Reader: k8s, Writer: k8s, Key: byKey(ns, "db-epoch")}
		admin, err := leadership.GRPCDialer{Resolver: leadership.ResolverFunc(func(leadership.Target) (string, error) {
			return cand.AdminAddr, nil
		})}.Dial(ctx, leadership.Target{})
		Expect(err).NotTo(HaveOccurred())
		defer admin.Close() //nolint:errcheck
		// The earlier operator prepares and decides, but never opens. Like an
		// operator, it tries again (with a fresh epoch) when a prepare fails on a
		// loaded machine; each failure is printed so a persistent one says why.
		var top uint64
		Eventually(func() error {
			top = highestEpoch(procs.Members)
			from, err := store.Load(ctx)
			if err != nil {
				return err
			}
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			prep, err := admin.PrepareFailover(pctx, &rolisv1.PrepareFailoverRequest{NewEpoch: top + 1, LastDecided: from.Record})
			if err != nil {
				fmt.Fprintf(GinkgoWriter, "PrepareFailover(epoch %d) on member %d: %v\n", top+1, cand.ID, err)
				return err
			}
			_, err = store.CompareAndSwap(ctx, from.Version, prep.GetProposed())
			return err
		}, "40s", "1s").Should(Succeed())

		id, epoch := leader()
		Expect(id).To(Equal(uint32(cand.ID)))
		Expect(epoch).To(Equal(top+1), "resuming decides nothing new")
		Eventually(podRoles(ctx, c)).Should(Equal(rolesWithLeader(id)))
		Expect(eventReasons(ctx, c)()).To(ContainElement(ReasonLeaderOpening))

		By("OpenEpoch of the same record again (an operator's retry) is answered, not refused")
		rec := epochRecord(ctx, ns)()
		octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
		defer ocancel()
		_, err = admin.OpenEpoch(octx, &rolisv1.OpenEpochRequest{Record: rec})
		Expect(err).NotTo(HaveOccurred())
		Expect(eventReasons(ctx, c)()).NotTo(ContainElement(ReasonPromotionFailed))
		w.Start(1, 0, 1, 31)
		acked := w.Acked()
		Eventually(w.Acked, "10s").Should(BeNumerically(">", acked+20), "the resumed leader takes writes")
		w.Stop()
		verify(id)
	})
})
