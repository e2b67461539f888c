package replication_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Members with different worker counts serve one cluster when they run
// the same number of replication streams (--replication-streams): worker i
// commits on stream i, a stream without a worker only sends heartbeats. A
// follower restarted with another worker count catches up, and a member
// with fewer workers than the old leader takes over; nothing acknowledged
// is lost. (This is how the operator changes workerThreads: one member at a
// time, streams fixed.)
func TestMembersWithDifferentWorkerCountsShareFixedStreams(t *testing.T) {
	workers := map[int]int{1: 2, 2: 1, 3: 3}
	cl, leader, w := underLoad(t, clusterOptions{
		args:    []string{"--replication-streams=4"},
		workers: func(id int) int { return workers[id] },
	}, 5)
	time.Sleep(time.Second)

	// A follower restarts with 4 workers (a rolling change of workerThreads).
	follower := runningIDs(cl, leader)[0]
	m := cl.member(follower)
	m.SetArgs(withFlag(m.Args(), "--worker-threads", "4"))
	if _, err := m.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatalf("member %d with 4 workers: %v", follower, err)
	}

	// Leadership moves to the member with 1 worker (2), or to the
	// restarted one if member 2 led.
	to := uint32(2)
	if leader == 2 {
		to = uint32(follower)
	}
	next, took := cl.failover(to, runningIDs(cl, 0)...)
	t.Logf("members' workers %v, follower %d restarted with 4; member %d leads after %v", workers, follower, next, took)
	if next != to {
		t.Fatalf("member %d leads, wanted %d", next, to)
	}
	time.Sleep(time.Second)
	w.Stop()
	t.Log(w.check(cl, next))
}

// withFlag returns args with flag set to value (replacing an earlier one).
func withFlag(args []string, flag, value string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, flag+"=") {
			out = append(out, a)
		}
	}
	return append(out, fmt.Sprintf("%s=%s", flag, value))
}
