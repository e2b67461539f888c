// Package replication_test runs replicated rolisd clusters (3 and 5 real
// processes on loopback, internal/testserver) under faults: kill -9, SIGSTOP,
// partitions (the --test-drop-peers-file knob of rolisd) and transport
// faults (loss and duplication of accepts), with a bank-transfer and a
// unique-insert workload through pkg/client. Every test names the fault and
// the invariants it checks:
//
//   - every acknowledged transaction is in the state of the new leader and
//     of every caught-up follower;
//   - the bank total is unchanged on every member;
//   - the history of every single key is linearizable (porcupine), with the
//     operations whose outcome the client could not know allowed either way.
//
// rolisd comes from $ROLISD_BIN or <repo>/bin/rolisd (`make replication-test`
// builds it first).
package replication_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// cluster is a replicated cluster with its fault knobs.
type cluster struct {
	t       testing.TB
	c       *testserver.Cluster
	dropDir string
	tls     *tls.Config // of the harness's clients, when the members serve TLS
}

// clusterOptions configures startCluster.
type clusterOptions struct {
	members int
	args    []string
	// initial < members: only members 1..initial start (a cluster of them);
	// the others are started later and added by membership changes.
	initial int
	// memberArgs adds flags per member; tls configures the harness's
	// clients (admin calls, workload) when the members serve TLS.
	memberArgs func(id int) []string
	// workers is a member's --worker-threads (2 when nil).
	workers func(id int) int
	tls     *tls.Config
	// env is added to every member's environment (rolisd's test hooks).
	env []string
}

func startCluster(t testing.TB, o clusterOptions) *cluster {
	t.Helper()
	if o.members == 0 {
		o.members = 3
	}
	dir := t.TempDir()
	// Interactive transactions abandoned by clients (their member paused or
	// cut off) hold a worker until they expire: keep that short.
	args := append([]string{"--batch-timeout=1ms", "--epoch-period-ms=10",
		"--shutdown-grace=1s", "--txn-idle-timeout=2s"}, o.args...)
	c := testserver.Start(t, testserver.Options{
		Members: o.members,
		Initial: o.initial,
		Args:    args,
		MemberArgs: func(id int) []string {
			workers := 2
			if o.workers != nil {
				workers = o.workers(id)
			}
			a := []string{"--test-drop-peers-file=" + filepath.Join(dir, fmt.Sprintf("drop-%d", id)),
				fmt.Sprintf("--worker-threads=%d", workers)}
			if o.memberArgs != nil {
				a = append(a, o.memberArgs(id)...)
			}
			return a
		},
		ProbeTLS: o.tls,
		Env:      o.env,
	})
	return &cluster{t: t, c: c, dropDir: dir, tls: o.tls}
}

// config is the client configuration of the harness for endpoints.
func (cl *cluster) config(endpoints ...string) client.Config {
	return client.Config{Endpoints: endpoints, TLS: cl.tls}
}

func (cl *cluster) member(id int) *testserver.Member { return cl.c.Member(id) }

// dropFile writes member id's fault knob: the ids it cuts itself off from,
// and "loss=P dup=P seed=N" faults of the accepts it sends.
func (cl *cluster) dropFile(id int, content string) {
	cl.t.Helper()
	p := filepath.Join(cl.dropDir, fmt.Sprintf("drop-%d", id))
	if err := os.WriteFile(p+".tmp", []byte(content), 0o644); err != nil {
		cl.t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		cl.t.Fatal(err)
	}
}

// partition cuts member id off from every other member (both directions)
// and returns once it is: member id's watermark stopped.
func (cl *cluster) partition(id int) {
	var others []string
	for _, m := range cl.c.Members {
		if m.ID != id {
			others = append(others, fmt.Sprint(m.ID))
			cl.dropFile(m.ID, fmt.Sprint(id))
		}
	}
	cl.dropFile(id, strings.Join(others, ","))
	if err := cl.waitIsolated(id, 5*time.Second); err != nil {
		cl.t.Fatal(err)
	}
}

// heal removes every partition and fault.
func (cl *cluster) heal() {
	for _, m := range cl.c.Members {
		cl.dropFile(m.ID, "")
	}
	time.Sleep(150 * time.Millisecond)
}

// faults sets loss and duplication of accepts on every member.
func (cl *cluster) faults(loss, dup float64, seed int64) {
	for _, m := range cl.c.Members {
		cl.dropFile(m.ID, fmt.Sprintf("loss=%g dup=%g seed=%d", loss, dup, seed+int64(m.ID)))
	}
	time.Sleep(150 * time.Millisecond)
}

func (cl *cluster) admin(ids ...int) *client.Admin {
	cl.t.Helper()
	var eps []string
	for _, m := range cl.c.Members {
		if len(ids) == 0 || slices.Contains(ids, m.ID) {
			eps = append(eps, m.AdminAddr)
		}
	}
	a, err := client.NewAdmin(context.Background(), cl.config(eps...))
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.t.Cleanup(func() { a.Close() })
	return a
}

func (cl *cluster) status(id int) (*rolisv1.StatusResponse, error) {
	a, err := client.NewAdmin(context.Background(), cl.config(cl.member(id).AdminAddr))
	if err != nil {
		return nil, err
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return a.Status(ctx, "")
}

// failover elects a leader among the members reachable at the admin
// endpoints of ids (all when none given): to is the candidate (0: the most
// advanced). It retries for a bounded time (a member may still be catching
// up, or a driver may race) and returns the leader's id and the time taken.
func (cl *cluster) failover(to uint32, ids ...int) (uint32, time.Duration) {
	cl.t.Helper()
	a := cl.admin(ids...)
	start := time.Now()
	var last error
	for attempt := 0; attempt < 40; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := a.Failover(ctx, client.FailoverOptions{To: to})
		cancel()
		if err == nil {
			return res.Candidate, time.Since(start)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	cl.t.Fatalf("failover (to %d) did not succeed within 40 attempts: %v", to, last)
	return 0, 0
}

// leader returns the id of the member that reports itself leader, or 0.
func (cl *cluster) leader() uint32 {
	for _, m := range cl.c.Members {
		if !m.Running() {
			continue
		}
		st, err := cl.status(m.ID)
		if err == nil && st.GetRole() == rolisv1.Role_LEADER {
			return st.GetId()
		}
	}
	return 0
}

func (cl *cluster) clientAddrs() []string { return cl.c.ClientAddrs() }

func newClient(t testing.TB, addrs []string) *client.Client {
	t.Helper()
	c, err := client.New(context.Background(), client.Config{Endpoints: slices.Clone(addrs), MaxRedirects: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitCaughtUp waits until every running member other than the leader is a
// follower whose replayed key has reached the leader's watermark as it was
// when the wait began.
func (cl *cluster) waitCaughtUp(leader uint32, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var target *rolisv1.LogKey
	for {
		st, err := cl.status(int(leader))
		if err == nil && st.GetRole() == rolisv1.Role_LEADER {
			target = st.GetWatermark()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("member %d is not leading: %v %v", leader, st.GetRole(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		var behind []string
		for _, m := range cl.c.Members {
			if uint32(m.ID) == leader || !m.Running() {
				continue
			}
			st, err := cl.status(m.ID)
			switch {
			case err != nil:
				behind = append(behind, fmt.Sprintf("%d: %v", m.ID, err))
			case st.GetRole() != rolisv1.Role_FOLLOWER:
				behind = append(behind, fmt.Sprintf("%d: %s", m.ID, client.RoleName(st.GetRole())))
			case client.CompareLogKey(st.GetReplayed(), target) < 0:
				behind = append(behind, fmt.Sprintf("%d: replayed %d.%d < %d.%d", m.ID, st.GetReplayed().GetEpoch(),
					st.GetReplayed().GetTs(), target.GetEpoch(), target.GetTs()))
			}
		}
		if len(behind) == 0 {
			// Read-only transactions read the engine's snapshot, a few epoch
			// periods behind what replay applied.
			time.Sleep(100 * time.Millisecond)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("members not caught up after %v: %s", limit, strings.Join(behind, "; "))
		}
		time.Sleep(25 * time.Millisecond)
	}
}
