package replication_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// The idle benchmark (docs/benchmarks.md, "Replication"): CPU that the
// members of an idle 3-member cluster of real rolisd processes on loopback
// burn (utime+stime from /proc/<pid>/stat over a window), and the latency
// of a single Put after 1 s of idleness against one right after another.
// It is a benchmark, not a test: it runs only when ROLIS_IDLE_RUNS=N (the
// Puts measured after idleness) is set,
//
//	ROLISD_BIN=$PWD/bin/rolisd ROLIS_IDLE_RUNS=15 go test -count=1 -v -run TestIdleCPU ./test/replication/
//
// The members run with rolisd's defaults (batch timeout 1 ms, epoch period
// 40 ms, 2 worker threads).
func TestIdleCPU(t *testing.T) {
	runs := runsFromEnv(t, "ROLIS_IDLE_RUNS", "a benchmark: set ROLIS_IDLE_RUNS=N to run it")
	window := 10 * time.Second
	c := testserver.Start(t, testserver.Options{Members: 3, Args: []string{"--worker-threads=2"}})
	cl := &cluster{t: t, c: c}
	leader, _ := cl.failover(1)
	cpu := idleCPU(t, cl, 2*time.Second, window)
	idle, warm := putLatencies(t, cl, runs)

	fmt.Printf("idle 3-member cluster (%s), CPU over %v, loadavg %s\n", os.Getenv("ROLISD_BIN"), window, loadavg())
	fmt.Printf("%-8s %-9s %8s\n", "member", "role", "cpu")
	roles := map[bool]string{true: "leader", false: "follower"}
	for _, m := range c.Members {
		fmt.Printf("%-8d %-9s %8.3f\n", m.ID, roles[uint32(m.ID) == leader], cpu[m.ID])
	}
	fmt.Printf("Put p50 after 1 s idle: %.2f ms (of %d); right after another Put: %.2f ms\n", ms(idle), runs, ms(warm))
	followers := []float64{}
	for _, m := range c.Members {
		if uint32(m.ID) != leader {
			followers = append(followers, cpu[m.ID])
		}
	}
	line, _ := json.Marshal(map[string]any{
		"benchmark": "idle_cpu", "members": 3, "window_s": window.Seconds(), "leader_cpu": cpu[int(leader)],
		"follower_cpu": followers, "put_after_idle_p50_ms": ms(idle), "put_warm_p50_ms": ms(warm), "runs": runs,
	})
	fmt.Println(string(line))
}

// Setting: an idle 3-member cluster with the built-in election (timeout
// 1 s: the leader's resting heartbeats go every 200 ms; a shorter timeout
// meets the late wakeups of a shared VM, up to ~0.5 s, docs/benchmarks.md
// "Session of 2026-11-27 21:25 UTC", and a follower then rightly calls an
// election). Invariants: the
// members rest (each burns well under the 0.15–0.33 CPU that heartbeats at
// every batch timeout cost), no follower mistakes the resting leader for a
// dead one (same leader and epoch after 5 s), and a Put after the rest is
// acknowledged.
func TestIdleClusterRestsWithoutElections(t *testing.T) {
	cl := startCluster(t, clusterOptions{args: []string{"--election=builtin", "--election-timeout=1s"}})
	waitLeader(t, cl, 0, 20*time.Second)
	// The first election may still race with a second candidate whose timer
	// ran out while the first opened: let it settle before the rest begins.
	time.Sleep(time.Second)
	leader := waitLeader(t, cl, 0, 20*time.Second)
	before, err := cl.status(int(leader))
	if err != nil {
		t.Fatal(err)
	}
	cpu := idleCPU(t, cl, time.Second, 5*time.Second)
	after, err := cl.status(int(leader))
	if err != nil {
		t.Fatal(err)
	}
	if after.GetRole() != before.GetRole() || after.GetEpoch() != before.GetEpoch() {
		t.Fatalf("the idle leader %d went from %s of epoch %d to %s of epoch %d", leader, before.GetRole(),
			before.GetEpoch(), after.GetRole(), after.GetEpoch())
	}
	for id, c := range cpu {
		if c > 0.1 {
			t.Errorf("idle member %d burned %.3f CPU", id, c)
		}
	}
	t.Logf("idle CPU by member: %v (leader %d)", cpu, leader)
	_, _ = putLatencies(t, cl, 1)
}

// idleCPU waits settle, then returns each running member's CPU (seconds
// per second) over window, with no client traffic.
func idleCPU(t *testing.T, cl *cluster, settle, window time.Duration) map[int]float64 {
	t.Helper()
	time.Sleep(settle)
	before := map[int]float64{}
	for _, m := range cl.c.Members {
		before[m.ID] = cpuSeconds(t, m.Pid())
	}
	time.Sleep(window)
	out := map[int]float64{}
	for _, m := range cl.c.Members {
		out[m.ID] = (cpuSeconds(t, m.Pid()) - before[m.ID]) / window.Seconds()
	}
	return out
}

// putLatencies returns the median latency of a Put after 1 s without
// traffic, and of a Put right after another one (runs of each).
func putLatencies(t *testing.T, cl *cluster, runs int) (idle, warm time.Duration) {
	t.Helper()
	c, err := client.New(context.Background(), cl.config(cl.clientAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	put := func(key string) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		if err := c.Put(ctx, []byte(key), []byte("v")); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	put("idle/warmup") // connections and the leader's address
	var idles, warms []time.Duration
	for i := 0; i < runs; i++ {
		time.Sleep(time.Second)
		idles = append(idles, put(fmt.Sprintf("idle/%d", i)))
		warms = append(warms, put(fmt.Sprintf("warm/%d", i)))
	}
	return median(idles), median(warms)
}

// cpuSeconds is utime+stime of a process (/proc/<pid>/stat, fields 14 and 15).
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command (field 2) may hold spaces: count from after its ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
