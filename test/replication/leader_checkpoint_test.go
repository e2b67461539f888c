package replication_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The leader's own checkpoints, derived from its disk (docs/replication.md,
// "Durability", "Checkpoints"), the state transfers it serves from them, and
// a kill of every member inside the checkpoints' commit window. rolisd's
// test hooks (docs/operations.md, "Durability", "Test hooks") come through
// the environment.

// tmpCheckpoints lists the checkpoint temporaries in member id's directory.
func tmpCheckpoints(data string, id int) []string {
	tmps, _ := filepath.Glob(filepath.Join(memberDir(data, id), "checkpoints", "checkpoint-*.tmp"))
	return tmps
}

// waitLeaderCheckpoints waits until the leader has written n checkpoints
// derived from its log, and checks that the log segments it had when the
// wait began are gone (truncated behind them).
func waitLeaderCheckpoints(t *testing.T, cl *cluster, data string, leader uint32, n int) {
	t.Helper()
	before := segments(t, data, int(leader), 0)
	waitFor(t, 90*time.Second, fmt.Sprintf("the leader (member %d) writing %d checkpoints from its log", leader, n), func() bool {
		return strings.Count(cl.member(int(leader)).Log(), "leader checkpoint written from the log") >= n
	})
	now := segments(t, data, int(leader), 0)
	if len(before) == 0 || slices.Contains(now, before[0]) {
		t.Fatalf("the leader's log was not truncated behind its checkpoints: stream 0 had %v, has %v", before, now)
	}
	if strings.Contains(cl.member(int(leader)).Log(), "served a snapshot of") {
		t.Fatalf("the leader paused its writes for a snapshot:\n%s", cl.member(int(leader)).LogTail(30))
	}
	for _, line := range strings.Split(cl.member(int(leader)).Log(), "\n") {
		if strings.Contains(line, "leader checkpoint written from the log") {
			t.Logf("leader: %s", line[strings.Index(line, "leader checkpoint"):])
			break
		}
	}
	t.Logf("leader stream 0 segments: %v when the wait began, %v now", before, now)
}

// Fault: a follower is killed and restarted with an empty data directory
// while the other follower refuses every snapshot request (test hook
// ROLIS_TEST_REFUSE_SNAPSHOTS), so that only the leader can serve one. The
// other follower stays up: a member that restarted empty must adopt the
// votes of a majority of the others, here both (docs/replication.md,
// "Members that lose their memory"). Invariants: the leader checkpoints
// from its log and truncates it; the empty member catches up from the
// leader's checkpoint (no write paused: the leader never takes its live
// snapshot); every acknowledged transaction is on it, the bank total holds,
// histories are linearizable.
func TestMemberRestartedEmptyCatchesUpFromTheLeadersCheckpoint(t *testing.T) {
	o, data := checkpointingOptions(t)
	o.env = []string{"ROLIS_TEST_REFUSE_SNAPSHOTS=2,3"}
	cl, leader, w := underLoad(t, o, 31)
	if leader != 1 {
		t.Fatalf("member %d leads; the test hook lets only member 1 serve snapshots", leader)
	}
	waitLeaderCheckpoints(t, cl, data, leader, 2)
	const empty = 3
	killEmpty(t, cl, data, empty)
	t.Logf("member %d killed and its data directory removed with %d transactions acknowledged", empty, w.Acked())
	if err := cl.member(empty).Restart(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cl.waitCaughtUp(leader, 60*time.Second); err != nil {
		t.Fatalf("member %d restarted empty: %v\n%s", empty, err, cl.member(empty).LogTail(30))
	}
	lead := cl.member(int(leader)).Log()
	if !strings.Contains(lead, "served a state transfer from its checkpoint") {
		t.Fatalf("the leader did not serve the transfer from its checkpoint:\n%s", cl.member(int(leader)).LogTail(30))
	}
	if strings.Contains(lead, "served a snapshot of") {
		t.Fatalf("the leader paused its writes for a live snapshot:\n%s", cl.member(int(leader)).LogTail(30))
	}
	if n := metricValue(t, cl, int(leader), "rolis_replication_checkpoint_snapshots_total"); n < 1 {
		t.Fatalf("rolis_replication_checkpoint_snapshots_total = %v on the leader, want at least 1", n)
	}
	if n := metricValue(t, cl, int(leader), "rolis_replication_leader_snapshots_total"); n != 0 {
		t.Fatalf("rolis_replication_leader_snapshots_total = %v on the leader, want 0", n)
	}
	if log := cl.member(empty).Log(); !strings.Contains(log, "state transfer done") {
		t.Fatalf("member %d did not rejoin by a state transfer:\n%s", empty, cl.member(empty).LogTail(30))
	}
	waitAcked(t, w, 50, 30*time.Second, "load going on after the transfer")
	w.Stop()
	t.Log(w.check(cl, leader))
}

// Fault: kill -9 of every member at once while each is inside a
// checkpoint's commit window: the test hook
// ROLIS_TEST_CHECKPOINT_COMMIT_PAUSE_MS holds every checkpoint 1.5 s between
// the temporary file's fdatasync and its rename, checkpoints are due every
// 1 MiB of log, and the kill comes only once every member has logged that
// its temporary is synced and that temporary is still there (not renamed). All restarted with the same flags; a leader
// elected. Invariants: each member recovers from its previous complete
// checkpoint and its log (the temporaries are ignored and removed); every
// acknowledged transaction is there, the bank total holds, histories are
// linearizable.
func TestKillAllInTheMiddleOfCheckpointsKeepsAcknowledgedTransactions(t *testing.T) {
	o, data := checkpointingOptions(t)
	o.env = []string{"ROLIS_TEST_CHECKPOINT_COMMIT_PAUSE_MS=1500"}
	cl, leader, w := underLoad(t, o, 32)
	waitLeaderCheckpoints(t, cl, data, leader, 1)
	// A member is inside the window when the temporary its hook last named
	// (written and synced) is still there, not yet renamed.
	inWindow := func(id int) string {
		log := cl.member(id).Log()
		i := strings.LastIndex(log, "test hook: ")
		if i < 0 {
			return ""
		}
		line := log[i+len("test hook: "):]
		j := strings.Index(line, " is written and synced")
		if j < 0 {
			return ""
		}
		if _, err := os.Stat(line[:j]); err != nil {
			return ""
		}
		return line[:j]
	}
	waitFor(t, 90*time.Second, "every member inside a checkpoint's commit window", func() bool {
		for _, m := range cl.c.Members {
			if inWindow(m.ID) == "" {
				return false
			}
		}
		return true
	})
	for _, m := range cl.c.Members {
		if _, err := m.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	acked := w.Acked()
	for _, m := range cl.c.Members {
		tmp := inWindow(m.ID)
		if tmp == "" {
			t.Fatalf("member %d was killed outside the window (its synced temporary was renamed)", m.ID)
		}
		t.Logf("member %d killed inside the window: %s synced, not renamed", m.ID, filepath.Base(tmp))
	}
	t.Logf("every member killed with %d transactions acknowledged", acked)
	restartAll(t, cl)
	for _, m := range cl.c.Members {
		if !strings.Contains(m.Log(), "durability: disk") || !strings.Contains(m.Log(), "checkpoint ") {
			t.Fatalf("member %d did not recover from a checkpoint:\n%s", m.ID, m.LogTail(20))
		}
		if tmps := tmpCheckpoints(data, m.ID); len(tmps) != 0 {
			t.Errorf("member %d kept the temporaries %v after recovery", m.ID, tmps)
		}
	}
	next, took := cl.failover(0)
	t.Logf("member %d leads after %v", next, took)
	// A member whose checkpoint stands below the new leader's log start
	// catches up by state transfer first (and that transfer's checkpoint
	// pauses in the hook too).
	if err := cl.waitCaughtUp(next, 60*time.Second); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	time.Sleep(1500 * time.Millisecond) // the load goes on under the new leader
	w.Stop()
	t.Log(w.check(cl, next))
}
