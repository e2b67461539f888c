package replication_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
)

// Durability (docs/operations.md, "Durability"): each member has its own
// --data-dir. ROLIS_TEST_DURABILITY=memory runs the kill-all scenario with
// --durability=memory instead, which must fail its check (the paper's
// members forget everything when all of them restart at once).
func durableOptions(t *testing.T) (clusterOptions, string) {
	t.Helper()
	mode := os.Getenv("ROLIS_TEST_DURABILITY")
	if mode == "" {
		mode = "disk"
	}
	data := t.TempDir()
	return clusterOptions{memberArgs: func(id int) []string {
		return []string{"--data-dir=" + memberDir(data, id), "--durability=" + mode}
	}}, data
}

// memberDir is member id's --data-dir under data.
func memberDir(data string, id int) string { return filepath.Join(data, fmt.Sprintf("member-%d", id)) }

// killEmpty kills member id and removes its data directory, so that its
// next start is empty (it catches up by state transfer).
func killEmpty(t *testing.T, cl *cluster, data string, id int) {
	t.Helper()
	if _, err := cl.member(id).Kill(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(memberDir(data, id)); err != nil {
		t.Fatal(err)
	}
}

// restartAll starts every member again with the same flags, at once.
func restartAll(t *testing.T, cl *cluster) {
	t.Helper()
	errs := make(chan error, len(cl.c.Members))
	for _, m := range cl.c.Members {
		go func() { errs <- m.Restart(60 * time.Second) }()
	}
	for range cl.c.Members {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// Fault: kill -9 of every member at once under bank and unique-insert
// load; all restarted with the same flags and data directories; a leader
// elected. Invariants: every acknowledged transaction is there, the bank
// total is kept, histories are linearizable, and the members say in their
// status and log what they recovered.
func TestKillAllMembersAtOnceKeepsAcknowledgedTransactions(t *testing.T) {
	o, _ := durableOptions(t)
	cl, _, w := underLoad(t, o, 21)
	time.Sleep(2 * time.Second)
	killAllRestartAndCheck(t, cl, w)
}

// killAllRestartAndCheck kills every member at once with kill -9, restarts
// them all with the same flags, elects a leader, lets the load go on under
// it, then stops the load and checks every acknowledged transaction, the
// bank total and linearizability on every member.
func killAllRestartAndCheck(t *testing.T, cl *cluster, w *workload) {
	t.Helper()
	acked := w.Acked()
	for _, m := range cl.c.Members {
		if _, err := m.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("every member killed with %d transactions acknowledged", acked)
	restartAll(t, cl)
	for _, m := range cl.c.Members {
		for _, line := range strings.Split(m.Log(), "\n") {
			if strings.Contains(line, "durability:") {
				t.Logf("member %d: %s", m.ID, line[strings.Index(line, "durability:"):])
			}
		}
	}
	next, took := cl.failover(0)
	t.Logf("member %d leads after %v", next, took)
	st, err := cl.status(int(next))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status of member %d: durability=%s data_dir=%s recovery=%q", next, st.GetDurability(), st.GetDataDir(), st.GetRecovery())
	time.Sleep(1500 * time.Millisecond) // the load goes on under the new leader
	w.Stop()
	t.Log(w.check(cl, next))
}

// Fault: a follower is killed and restarted with an empty data directory
// while the others keep theirs. Invariants: it takes the amnesia path (it
// does not vote before a state transfer), rejoins by state transfer, and
// no acknowledged transaction is lost.
func TestMemberRestartedWithAnEmptyDataDirRejoinsByStateTransfer(t *testing.T) {
	o, data := durableOptions(t)
	cl, leader, w := underLoad(t, o, 22)
	time.Sleep(time.Second)
	f := other(cl, leader)
	killEmpty(t, cl, data, int(f))
	if err := cl.member(int(f)).Restart(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatalf("member %d restarted empty: %v", f, err)
	}
	if log := cl.member(int(f)).Log(); !strings.Contains(log, "state transfer done") ||
		!strings.Contains(log, "checkpoint of the state transfer written") {
		t.Fatalf("member %d did not rejoin by a state transfer written to its disk:\n%s", f, cl.member(int(f)).LogTail(30))
	}
	time.Sleep(time.Second)
	w.Stop()
	t.Log(w.check(cl, leader))
}

// Fault: every member is killed; two of the three come back with empty data
// directories. Invariants: the cluster does not serve an empty store (no
// member votes a leader in, no write is acknowledged), and the empty members
// report the suspected data loss in their status and log.
func TestMajorityRestartedEmptyReportsDataLossAndDoesNotServe(t *testing.T) {
	o, data := durableOptions(t)
	cl, leader, w := underLoad(t, o, 23)
	time.Sleep(time.Second)
	w.Stop()
	for _, m := range cl.c.Members {
		if _, err := m.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	var empty []int
	for _, m := range cl.c.Members {
		if uint32(m.ID) != leader {
			empty = append(empty, m.ID)
			if err := os.RemoveAll(memberDir(data, m.ID)); err != nil {
				t.Fatal(err)
			}
		}
	}
	restartAll(t, cl)
	for _, id := range empty {
		waitFor(t, 20*time.Second, fmt.Sprintf("member %d reporting data loss", id), func() bool {
			st, err := cl.status(id)
			return err == nil && st.GetDataLossSuspected()
		})
		st, _ := cl.status(id)
		t.Logf("member %d: role %v, data_loss_reason %q", id, st.GetRole(), st.GetDataLossReason())
		if st.GetRole() == rolisv1.Role_FOLLOWER || st.GetRole() == rolisv1.Role_LEADER {
			t.Errorf("member %d came back empty and votes (%v)", id, st.GetRole())
		}
		if !strings.Contains(cl.member(id).Log(), "DATA LOSS SUSPECTED") {
			t.Errorf("member %d does not log the suspected data loss", id)
		}
	}
	// No leader can be elected: a failover needs a majority of voters.
	a := cl.admin()
	for attempt := 0; attempt < 3; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := a.Failover(ctx, client.FailoverOptions{})
		cancel()
		if err == nil {
			t.Fatalf("a leader was elected over a majority of empty members")
		}
		t.Logf("failover refused: %v", err)
	}
	if l := cl.leader(); l != 0 {
		t.Fatalf("member %d leads over a majority of empty members", l)
	}
}
