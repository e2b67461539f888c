package replication_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
)

// The failover gap benchmark (docs/benchmarks.md, "Failover gap"): the time
// from SIGKILL of the leader to the first write acknowledged after it, on a
// 3-member cluster of real rolisd processes on loopback. It is a benchmark,
// not a test: it runs only when ROLIS_FAILOVER_GAP_RUNS=N (N >= 1) is set,
//
//	ROLISD_BIN=$PWD/bin/rolisd ROLIS_FAILOVER_GAP_RUNS=10 go test -count=1 -v \
//	  -run TestFailoverGap ./test/replication/
//
// and prints, per way of electing, a table of the gaps and a JSON line:
//   - builtin: the members elect by themselves (--election=builtin, election
//     timeout $ROLIS_FAILOVER_GAP_ELECTION_TIMEOUT, default 300ms);
//   - driver: an external driver (what `rolisctl failover` runs, through
//     pkg/client) polls the leader's admin Status every 50 ms and, once a
//     poll fails, runs Admin.Failover among the members.
//
// After each kill the killed member is restarted (empty: it catches up by
// state transfer) and the next kill waits until it has caught up.
func TestFailoverGap(t *testing.T) {
	runs := runsFromEnv(t, "ROLIS_FAILOVER_GAP_RUNS", "a benchmark: set ROLIS_FAILOVER_GAP_RUNS=N to run it")
	electionTimeout := os.Getenv("ROLIS_FAILOVER_GAP_ELECTION_TIMEOUT")
	if electionTimeout == "" {
		electionTimeout = "300ms"
	}
	t.Run("builtin", func(t *testing.T) {
		cl := startCluster(t, clusterOptions{args: []string{"--election=builtin", "--election-timeout=" + electionTimeout}})
		reportGaps(t, "builtin", "--election=builtin --election-timeout="+electionTimeout,
			measureGaps(t, cl, runs, waitLeader(t, cl, 0, 30*time.Second), nil))
	})
	t.Run("driver", func(t *testing.T) {
		cl := startCluster(t, clusterOptions{})
		leader, _ := cl.failover(1)
		reportGaps(t, "driver", "Admin.Failover after a failed 50ms Status poll",
			measureGaps(t, cl, runs, leader, driveFailover))
	})
}

// driveFailover is the external driver: it polls the leader until a Status
// call fails, then runs the failover protocol among every member (the killed
// one answers nothing and is skipped). It returns when a failover succeeded.
func driveFailover(t *testing.T, cl *cluster, leader uint32, stop <-chan struct{}) {
	a := cl.admin()
	for {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		st, err := a.Status(ctx, cl.member(int(leader)).AdminAddr)
		cancel()
		if err == nil && st.GetRole() == rolisv1.Role_LEADER {
			continue
		}
		for attempt := 0; attempt < 50; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := a.Failover(ctx, client.FailoverOptions{})
			cancel()
			if err == nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		t.Errorf("driver: no failover succeeded after 50 attempts")
		return
	}
}

// measureGaps kills the leader `runs` times; drive (nil for the built-in
// election) runs beside each kill until a new leader is open.
func measureGaps(t *testing.T, cl *cluster, runs int, leader uint32,
	drive func(*testing.T, *cluster, uint32, <-chan struct{})) []time.Duration {
	c := newClient(t, cl.clientAddrs())
	var gaps []time.Duration
	for run := 0; run < runs; run++ {
		if err := cl.waitCaughtUp(leader, 60*time.Second); err != nil {
			t.Fatal(err)
		}
		// A write before the kill: the cluster serves.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.Put(ctx, []byte(fmt.Sprintf("gap/before/%d", run)), []byte("1")); err != nil {
			cancel()
			t.Fatalf("run %d: the cluster does not take writes before the kill: %v", run, err)
		}
		cancel()
		stop := make(chan struct{})
		done := make(chan struct{})
		if drive != nil {
			go func() { defer close(done); drive(t, cl, leader, stop) }()
		} else {
			close(done)
		}
		if _, err := cl.member(int(leader)).Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		gap := putUntilAcknowledged(t, c, fmt.Sprintf("gap/after/%d", run), killed, 30*time.Second)
		close(stop)
		<-done
		gaps = append(gaps, gap)
		next := waitLeader(t, cl, leader, 10*time.Second)
		t.Logf("run %d: killed member %d; member %d leads; first acknowledged write after %v", run, leader, next, gap)
		if err := cl.member(int(leader)).Restart(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		leader = next
	}
	return gaps
}

func reportGaps(t *testing.T, name, how string, gaps []time.Duration) {
	ms := make([]float64, len(gaps))
	for i, g := range gaps {
		ms[i] = float64(g.Microseconds()) / 1000
	}
	sorted := slices.Clone(ms)
	slices.Sort(sorted)
	p50 := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		p50 = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	fmt.Printf("failover gap, %s (%s), %d kills of the leader:\n", name, how, len(ms))
	fmt.Printf("  %-6s %10s\n", "run", "gap_ms")
	for i, v := range ms {
		fmt.Printf("  %-6d %10.1f\n", i, v)
	}
	fmt.Printf("  min %.1f ms  p50 %.1f ms  max %.1f ms\n", sorted[0], p50, sorted[len(sorted)-1])
	line, _ := json.Marshal(map[string]any{
		"benchmark": "failover_gap", "election": name, "how": how, "runs": len(ms),
		"min_ms": sorted[0], "p50_ms": p50, "max_ms": sorted[len(sorted)-1], "gaps_ms": ms,
	})
	fmt.Println(string(line))
}
