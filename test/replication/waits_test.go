package replication_test

import (
	"fmt"
	"testing"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
)

// Bounded waits on observable state, the synchronisation of the scenarios
// (instead of sleeps that assume how fast a machine is).

// waitAcked waits until the workload has n more acknowledged transactions
// than now: it ran under the current conditions (a leader serving, or a
// fault in place) for a while.
func waitAcked(t *testing.T, w *workload, n int, limit time.Duration, what string) {
	t.Helper()
	from := w.Acked()
	waitFor(t, limit, fmt.Sprintf("%d acknowledged transactions %s", n, what), func() bool { return w.Acked() >= from+n })
}

// waitNoAcks waits until no transaction has been acknowledged for quiet:
// the member that was leading acknowledges nothing more.
func waitNoAcks(t *testing.T, w *workload, quiet, limit time.Duration, what string) {
	t.Helper()
	last, since := w.Acked(), time.Now()
	waitFor(t, limit, fmt.Sprintf("no acknowledged transaction for %v %s", quiet, what), func() bool {
		if n := w.Acked(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= quiet
	})
}

// waitRole waits until member id reports one of roles.
func waitRole(t *testing.T, cl *cluster, id uint32, limit time.Duration, roles ...rolisv1.Role) {
	t.Helper()
	waitFor(t, limit, fmt.Sprintf("member %d in role %v", id, roles), func() bool {
		st, err := cl.status(int(id))
		if err != nil {
			return false
		}
		for _, r := range roles {
			if st.GetRole() == r {
				return true
			}
		}
		return false
	})
}

// waitIsolated waits until member id's watermark stops: cut off from every
// other member it learns (as a follower) or makes (as the leader) no new G.
// It must hold still across four reads of the fault knob (50 ms apart).
func (cl *cluster) waitIsolated(id int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var held *rolisv1.LogKey
	heldSince := time.Now()
	for {
		st, err := cl.status(id)
		if err == nil {
			if held == nil || client.CompareLogKey(st.GetWatermark(), held) != 0 {
				held, heldSince = st.GetWatermark(), time.Now()
			} else if time.Since(heldSince) >= 200*time.Millisecond {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("member %d: watermark still moving %v after its partition (%v)", id, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
