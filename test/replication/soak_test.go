package replication_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestSoak runs ROLIS_SOAK_RUNS seeded fault runs (skipped when unset;
// `make soak` runs 50) and prints how many passed. Each run starts a fresh
// 3-member cluster, runs the workloads, injects one fault chosen by the seed
// (kill -9 of the leader, SIGSTOP of the leader, partition of the leader,
// restart of a follower empty, loss and duplication of accepts), fails over
// when the leader is gone, and checks the invariants of the package.
// ROLIS_SOAK_SEED sets the first seed.
func TestSoak(t *testing.T) {
	runs := runsFromEnv(t, "ROLIS_SOAK_RUNS", "set ROLIS_SOAK_RUNS (make soak)")
	first := uint64(1)
	if s, err := strconv.ParseUint(os.Getenv("ROLIS_SOAK_SEED"), 10, 64); err == nil {
		first = s
	}
	passed, injected := 0, 0
	for i := 0; i < runs; i++ {
		seed := first + uint64(i)
		ok := t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { soakRun(t, seed, &injected) })
		if ok {
			passed++
		}
		fmt.Printf("soak: seed %d %s (%d of %d passed so far)\n", seed, map[bool]string{true: "passed", false: "FAILED"}[ok],
			passed, i+1)
	}
	fmt.Printf("soak: %d faults injected, %d of %d seeded fault runs passed\n", injected, passed, runs)
}

var soakFaults = []string{"kill-leader", "pause-leader", "partition-leader", "restart-follower", "loss-dup-kill-leader"}

// soakRun counts the fault in *injected once it is in effect (a failed
// kill, pause or partition fails the run instead).
func soakRun(t *testing.T, seed uint64, injected *int) {
	rng := rand.New(rand.NewPCG(seed, 99))
	fault := soakFaults[rng.IntN(len(soakFaults))]
	batch := []int{1, 10, 50, 200}[rng.IntN(4)]
	t.Logf("seed %d: fault %s, batch size %d", seed, fault, batch)
	cl := startCluster(t, clusterOptions{args: []string{fmt.Sprintf("--batch-size=%d", batch)}})
	leader, _ := cl.failover(uint32(1 + rng.IntN(3)))
	w := newWorkload(t, cl.clientAddrs())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w.Setup(ctx)
	w.Start(2+rng.IntN(3), 1, 1+rng.IntN(2), seed*1000)
	time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond)
	next := leader
	switch fault {
	case "kill-leader":
		kill(t, cl, leader)
		next, _ = cl.failover(0, runningIDs(cl, leader)...)
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		if err := cl.member(int(leader)).Restart(30 * time.Second); err != nil {
			t.Fatal(err)
		}
	case "pause-leader":
		if err := cl.member(int(leader)).Pause(); err != nil {
			t.Fatal(err)
		}
		next, _ = cl.failover(0, runningIDs(cl, leader)...)
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		if err := cl.member(int(leader)).Resume(); err != nil {
			t.Fatal(err)
		}
	case "partition-leader":
		cl.partition(int(leader))
		next, _ = cl.failover(0, runningIDs(cl, leader)...)
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		cl.heal()
	case "restart-follower":
		f := other(cl, leader)
		kill(t, cl, f)
		time.Sleep(time.Duration(200+rng.IntN(500)) * time.Millisecond)
		if err := cl.member(int(f)).Restart(30 * time.Second); err != nil {
			t.Fatal(err)
		}
	case "loss-dup-kill-leader":
		cl.faults(float64(rng.IntN(10))/100, float64(rng.IntN(10))/100, int64(seed))
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		kill(t, cl, leader)
		next, _ = cl.failover(0, runningIDs(cl, leader)...)
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		cl.heal()
	}
	*injected++
	time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
	w.Stop()
	t.Log(w.check(cl, next))
}

// kill sends SIGKILL to member id and fails the run unless it died of it.
func kill(t *testing.T, cl *cluster, id uint32) {
	t.Helper()
	st, err := cl.member(int(id)).Kill()
	if err != nil {
		t.Fatalf("kill -9 of member %d: %v", id, err)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("member %d did not die of SIGKILL: %v", id, st)
	}
}
