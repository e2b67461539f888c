package replication_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rolisdb/rolis/internal/ledger"
	"github.com/rolisdb/rolis/pkg/client"
)

// workload is the shared bank/insert workload and ledger (internal/ledger)
// with the check of this package's clusters.
type workload struct{ *ledger.Workload }

func newWorkload(t testing.TB, addrs []string) *workload {
	return &workload{ledger.New(t, client.Config{Endpoints: addrs})}
}

// newClusterWorkload runs against cl's clients with the harness's TLS.
func newClusterWorkload(cl *cluster) *workload {
	return &workload{ledger.New(cl.t, cl.config(cl.clientAddrs()...))}
}

// check waits until the running followers caught up with leader, reads
// every running member and verifies the invariants on them. It returns a
// summary line.
func (w *workload) check(cl *cluster, leader uint32) string {
	t := cl.t
	t.Helper()
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatalf("invariant check: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var snaps []ledger.Snapshot
	for _, m := range cl.c.Members {
		if !m.Running() {
			continue
		}
		isLeader := uint32(m.ID) == leader
		call := w.Now()
		state, err := ledger.Dump(ctx, cl.config(m.ClientAddr), isLeader)
		if err != nil {
			t.Fatalf("reading member %d: %v", m.ID, err)
		}
		what := fmt.Sprintf("member %d (follower)", m.ID)
		if isLeader {
			what = fmt.Sprintf("member %d (leader)", m.ID)
		}
		snaps = append(snaps, ledger.Snapshot{What: what, State: state, Leader: isLeader, Call: call, Return: w.Now()})
	}
	return w.Check(snaps)
}
