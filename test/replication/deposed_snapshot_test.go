package replication_test

import (
	"context"
	"testing"
	"time"

	"github.com/rolisdb/rolis/pkg/client"
)

// A read-write transaction left open on the leader (its client went away
// without Abort) must not hold the member's read-only snapshots once it is
// deposed: as a follower its snapshots follow replay. Before the fix the
// resumed old leader read the store as it was when it was paused until the
// transaction's idle timeout (30 s by default), though its status said it had
// replayed everything (the e2e leader-pause failure).
func TestDeposedLeaderSnapshotsFollowReplayDespiteAnAbandonedTransaction(t *testing.T) {
	cl := startCluster(t, clusterOptions{})
	leader := elect(t, cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := newClient(t, []string{cl.member(int(leader)).ClientAddr})
	// Longer than the whole test: the harness's default (2 s) would end it.
	tx, err := old.Begin(ctx, client.IdleTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// As a bank transfer does: reads, then writes.
	if _, _, err := tx.Get(ctx, []byte("abandoned")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put(ctx, []byte("abandoned"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	// The transaction stays open: no Commit, no Rollback.
	if err := cl.waitCaughtUp(leader, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	if err := cl.member(int(leader)).Pause(); err != nil {
		t.Fatal(err)
	}
	next, took := cl.failover(0, runningIDs(cl, leader)...)
	t.Logf("member %d paused; member %d leads after %v", leader, next, took)
	c := newClient(t, cl.clientAddrs())
	putUntilAcknowledged(t, c, "after-failover", time.Now(), 10*time.Second)
	if err := cl.member(int(leader)).Resume(); err != nil {
		t.Fatal(err)
	}
	if err := cl.waitCaughtUp(next, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, []byte("after-resume"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := cl.waitCaughtUp(next, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	// Read-only snapshots trail replay by a few engine epochs (40 ms each):
	// give them 2 s, far below the 30 s idle timeout.
	deadline := time.Now().Add(2 * time.Second)
	for {
		var missing []string
		for _, k := range []string{"after-failover", "after-resume"} {
			if !readOnlyHas(ctx, t, old, k) {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resumed member %d reports itself caught up, but its read-only snapshot lacks %v", leader, missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := tx.Commit(ctx); err == nil {
		t.Fatal("a transaction of the deposed leader committed")
	}
}

// readOnlyHas reads key in a read-only (snapshot) transaction on c's member.
func readOnlyHas(ctx context.Context, t *testing.T, c *client.Client, key string) bool {
	t.Helper()
	tx, err := c.Begin(ctx, client.ReadOnly())
	if err != nil {
		t.Fatalf("read-only Begin: %v", err)
	}
	defer tx.Rollback(ctx)
	_, ok, err := tx.Get(ctx, []byte(key))
	if err != nil {
		t.Fatalf("read-only Get %s: %v", key, err)
	}
	return ok
}
