package replication_test

import (
	"fmt"
	"testing"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// Fault: the leader is cut off under load (it commits, in the minority,
// what it can never acknowledge), the other two elect a new leader, then the
// third member is killed and the partition heals. The old leader's commits
// did not survive the new epoch's cut, so it must catch up by a state
// transfer, and the only member that can give it a snapshot is the new
// leader (a follower that is caught up would be asked first; there is none).
// Invariants: writes go on meanwhile (the old leader keeps voting), it
// catches up, the leader's metrics count the snapshot it served and the old
// leader's the transfer; no acknowledged transaction lost, bank total kept,
// histories linearizable. Without the leader's snapshot the old leader
// would wait for the killed member for as long as it was down.
func TestDeposedLeaderCatchesUpFromTheNewLeaderWhileTheThirdMemberIsDown(t *testing.T) {
	cl, old, w := underLoad(t, clusterOptions{}, 6)
	time.Sleep(time.Second)

	cl.partition(int(old))
	time.Sleep(300 * time.Millisecond) // its clients go on committing there
	next, took := cl.failover(0, runningIDs(cl, old)...)
	third := other(cl, old, next)
	t.Logf("member %d cut off; member %d leads after %v; killing member %d", old, next, took, third)
	if _, err := cl.member(int(third)).Kill(); err != nil {
		t.Fatal(err)
	}
	cl.heal()

	start := time.Now()
	waitFor(t, 30*time.Second, fmt.Sprintf("member %d, deposed, caught up by a state transfer", old), func() bool {
		st, err := cl.status(int(old))
		return err == nil && st.GetRole() == rolisv1.Role_FOLLOWER &&
			metricValue(t, cl, int(old), "rolis_replication_state_transfers_total") >= 1
	})
	t.Logf("member %d caught up %v after the heal", old, time.Since(start).Round(time.Millisecond))
	if n := metricValue(t, cl, int(next), "rolis_replication_leader_snapshots_total"); n < 1 {
		t.Errorf("leader %d served %v snapshots: member %d caught up from whom?", next, n, old)
	}
	acked := w.Acked()
	waitFor(t, 10*time.Second, fmt.Sprintf("writes acknowledged by members %d and %d alone", next, old), func() bool {
		return w.Acked() > acked+100
	})
	w.Stop()
	t.Log(w.check(cl, next))
}
