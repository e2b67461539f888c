package replication_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rolisdb/rolis/internal/testserver"
)

// The failover timeline (docs/benchmarks.md, "Failover timeline"): rolisctl
// bench --timeline=100ms against a 3-member cluster of real rolisd processes
// on loopback, the leader SIGKILLed mid-run, the JSON line (with the kill's
// time) appended to a file for hack/bench/plot.py. It is a benchmark run,
// not a test: it runs only when ROLIS_FAILOVER_TIMELINE_OUT names the file,
//
//	ROLISD_BIN=$PWD/bin/rolisd ROLIS_FAILOVER_TIMELINE_OUT=$PWD/build/bench/failover.jsonl \
//	  go test -count=1 -v -run 'TestFailoverTimeline$' ./test/replication/
//
// once per way of electing (as TestFailoverGap): builtin (the members elect
// by themselves, --election-timeout=300ms) and driver (what `rolisctl
// failover` runs, after a failed 50 ms Status poll). rolisctl comes from
// $ROLISCTL_BIN, or is built; $ROLIS_FAILOVER_TIMELINE_ARGS adds bench
// flags (--batch=0: pipelined; --pipeline=0 --concurrency=8: unary). What
// it checks: bench runs on across the failover and exits 0, and commits
// again after the kill.
func TestFailoverTimeline(t *testing.T) {
	out := os.Getenv("ROLIS_FAILOVER_TIMELINE_OUT")
	if out == "" {
		t.Skip("a benchmark: set ROLIS_FAILOVER_TIMELINE_OUT=FILE to run it")
	}
	seconds := envOr("ROLIS_FAILOVER_TIMELINE_SECONDS", "6")
	killAfter := 2 * time.Second
	bin := rolisctlBinary(t)
	t.Run("builtin", func(t *testing.T) {
		cl := startCluster(t, clusterOptions{args: []string{"--election=builtin", "--election-timeout=300ms"}})
		leader := waitLeader(t, cl, 0, 30*time.Second)
		appendLine(t, out, timelineRun(t, cl, bin, leader, "builtin", "--election=builtin --election-timeout=300ms",
			seconds, killAfter, nil))
	})
	t.Run("driver", func(t *testing.T) {
		cl := startCluster(t, clusterOptions{})
		leader, _ := cl.failover(1)
		appendLine(t, out, timelineRun(t, cl, bin, leader, "driver", "Admin.Failover after a failed 50ms Status poll",
			seconds, killAfter, driveFailover))
	})
}

// timelineRun loads YCSB++, runs rolisctl bench with the timeline against
// every member, SIGKILLs the leader killAfter into it (drive, if not nil,
// runs beside: the external driver), and returns bench's JSON line with
// the kill added.
func timelineRun(t *testing.T, cl *cluster, bin string, leader uint32, election, how, seconds string,
	killAfter time.Duration, drive func(*testing.T, *cluster, uint32, <-chan struct{})) map[string]any {
	// The leader first: rolisctl load's streams do not follow redirects.
	addrs := []string{cl.member(int(leader)).ClientAddr}
	for _, a := range cl.clientAddrs() {
		if a != addrs[0] {
			addrs = append(addrs, a)
		}
	}
	endpoint := "--endpoint=" + strings.Join(addrs, ",")
	if o, err := exec.Command(bin, endpoint, "load", "--keys=100000").CombinedOutput(); err != nil {
		t.Fatalf("rolisctl load: %v\n%s", err, o)
	}
	if err := cl.waitCaughtUp(leader, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// --timeout=1s: a stream silent for a second is given up.
	args := []string{endpoint, "--timeout=1s", "bench", "--workload=ycsbpp", "--keys=100000",
		"--no-load", "--warmup=0", "--seconds=" + seconds, "--timeline=100ms", "--json"}
	args = append(args, strings.Fields(os.Getenv("ROLIS_FAILOVER_TIMELINE_ARGS"))...)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(killAfter)
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
	err := cmd.Wait()
	close(stop)
	<-done
	if err != nil {
		t.Fatalf("rolisctl bench across the failover: %v\n%s", err, tail(stderr.String(), 20))
	}
	next := waitLeader(t, cl, leader, 10*time.Second)
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var rep map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("bench's JSON line: %v\n%s", err, stdout.String())
	}
	start, _ := rep["timeline_start_unix"].(float64)
	killAt := float64(killed.UnixMicro())/1e6 - start
	rep["benchmark"] = "failover_timeline"
	rep["where"] = "loopback"
	rep["election"], rep["how"] = election, how
	rep["killed_member"], rep["new_leader"] = leader, next
	rep["kill_unix"], rep["kill_at_s"] = float64(killed.UnixMicro())/1e6, killAt

	// Commits after the kill: bench followed the new leader.
	var after, failed float64
	tl, _ := rep["timeline"].([]any)
	for _, b := range tl {
		m, _ := b.(map[string]any)
		if tt, _ := m["t"].(float64); tt > killAt {
			c, _ := m["committed"].(float64)
			after += c
		}
		f, _ := m["failed"].(float64)
		failed += f
	}
	t.Logf("%s: killed member %d at %.2f s; member %d leads; %.0f commits after the kill, %.0f failed; %d buckets",
		election, leader, killAt, next, after, failed, len(tl))
	if len(tl) == 0 || after == 0 {
		t.Errorf("no commit after the kill: bench did not follow the new leader\n%s", tail(stderr.String(), 20))
	}
	return rep
}

func appendLine(t *testing.T, path string, rep map[string]any) {
	line, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s\n", line); err != nil {
		t.Fatal(err)
	}
}

// rolisctlBinary is $ROLISCTL_BIN, else a build of this checkout's (a
// bin/rolisctl may be older than --timeline).
func rolisctlBinary(t *testing.T) string {
	if b := os.Getenv("ROLISCTL_BIN"); b != "" {
		return b
	}
	root, err := testserver.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(t.TempDir(), "rolisctl")
	cmd := exec.Command("go", "build", "-o", b, "./cmd/rolisctl")
	cmd.Dir = root
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building rolisctl: %v\n%s", err, o)
	}
	return b
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
