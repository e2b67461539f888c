package replication_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Periodic checkpoints (docs/operations.md, "Durability", "Checkpoints"):
// the members checkpoint every 1 MiB of log (--checkpoint-every), so that a
// short load takes several checkpoints and truncates the log behind them.

const smallCheckpointInterval = "--checkpoint-every=1MiB"

func checkpointingOptions(t *testing.T) (clusterOptions, string) {
	o, data := durableOptions(t)
	durable := o.memberArgs
	o.memberArgs = func(id int) []string { return append(durable(id), smallCheckpointInterval) }
	return o, data
}

// segments lists the log segment files of member id's stream t, oldest first.
func segments(t *testing.T, data string, id, stream int) []string {
	t.Helper()
	dir := filepath.Join(memberDir(data, id), fmt.Sprintf("stream-%d", stream))
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

var checkpointsWritten = regexp.MustCompile(`checkpoints written since: (\d+)`)

// checkpointsOf is the count of checkpoints member id reports having
// written since it started (its status's recovery line).
func checkpointsOf(cl *cluster, id int) int {
	st, err := cl.status(id)
	if err != nil {
		return -1
	}
	m := checkpointsWritten.FindStringSubmatch(st.GetRecovery())
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitCheckpointsAndTruncation waits until every follower has written at
// least n checkpoints, and checks on disk that each holds one complete
// checkpoint and that the log segments it had at the start are gone.
func waitCheckpointsAndTruncation(t *testing.T, cl *cluster, data string, leader uint32, n int) {
	t.Helper()
	first := map[int][]string{}
	for _, m := range cl.c.Members {
		if uint32(m.ID) != leader {
			first[m.ID] = segments(t, data, m.ID, 0)
		}
	}
	for id := range first {
		waitFor(t, 90*time.Second, fmt.Sprintf("member %d writing %d checkpoints", id, n), func() bool {
			return checkpointsOf(cl, id) >= n
		})
	}
	for id, before := range first {
		dir := memberDir(data, id)
		ckpts, err := filepath.Glob(filepath.Join(dir, "checkpoints", "checkpoint-*.ckpt"))
		if err != nil || len(ckpts) != 1 {
			t.Fatalf("member %d: want one complete checkpoint on disk, found %v (%v)", id, ckpts, err)
		}
		now := segments(t, data, id, 0)
		if len(before) == 0 || slices.Contains(now, before[0]) {
			t.Fatalf("member %d: the log was not truncated behind its checkpoints: stream 0 had %v, has %v", id, before, now)
		}
		if !strings.Contains(cl.member(id).Log(), "checkpoint written:") {
			t.Fatalf("member %d does not log its checkpoints:\n%s", id, cl.member(id).LogTail(30))
		}
		t.Logf("member %d: %d checkpoints, %s; stream 0 segments %v at the start, %v now", id, checkpointsOf(cl, id),
			filepath.Base(ckpts[0]), before, now)
	}
}

// Fault: kill -9 of every member at once after several checkpoints under
// bank and unique-insert load; all restarted with the same flags. Each
// follower's store is then its newest checkpoint plus the log after it.
// Invariants: those of the kill-all test (every acknowledged transaction,
// the bank total, linearizability), and checkpoints and truncation on disk.
func TestKillAllAfterCheckpointsKeepsAcknowledgedTransactions(t *testing.T) {
	o, data := checkpointingOptions(t)
	cl, leader, w := underLoad(t, o, 24)
	waitCheckpointsAndTruncation(t, cl, data, leader, 3)
	killAllRestartAndCheck(t, cl, w)
}

// Fault: every member in turn is killed with kill -9 under load and
// restarted with the same flags (the leader last, then a failover), each
// after the previous one caught up, with checkpoints taken all along.
// Invariants: those of the kill-all test.
func TestKillMembersOneAfterAnotherAfterCheckpointsKeepsAcknowledgedTransactions(t *testing.T) {
	o, data := checkpointingOptions(t)
	cl, leader, w := underLoad(t, o, 25)
	waitCheckpointsAndTruncation(t, cl, data, leader, 2)
	var order []uint32
	for _, m := range cl.c.Members {
		if uint32(m.ID) != leader {
			order = append(order, uint32(m.ID))
		}
	}
	order = append(order, leader)
	for _, id := range order {
		acked := w.Acked()
		kill(t, cl, id)
		t.Logf("member %d killed with %d transactions acknowledged", id, acked)
		if err := cl.member(int(id)).Restart(60 * time.Second); err != nil {
			t.Fatal(err)
		}
		if id == leader {
			leader, _ = cl.failover(0)
			t.Logf("member %d leads", leader)
		}
		if err := cl.waitCaughtUp(leader, 60*time.Second); err != nil {
			t.Fatalf("after member %d restarted: %v", id, err)
		}
		waitAcked(t, w, 50, 30*time.Second, fmt.Sprintf("load going on after member %d restarted", id))
	}
	time.Sleep(time.Second)
	w.Stop()
	t.Log(w.check(cl, leader))
}
