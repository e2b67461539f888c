package server_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// residentBytes reads the resident memory of a process from /proc/<pid>/statm.
func residentBytes(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		t.Fatalf("statm: %q", b)
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * uint64(os.Getpagesize())
}

// Near its memory limit rolisd refuses writes that add data with
// RESOURCE_EXHAUSTED and what to do, serves reads, deletes and read-only
// procedures, and keeps running (docs/operations.md, "Memory limit").
func TestWritesNearTheMemoryLimitAreRefusedAndReadsStillServed(t *testing.T) {
	probe, _ := standalone(t)
	startRSS := residentBytes(t, probe.Pid())
	if _, err := probe.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	limit := startRSS + 64<<20
	m, cl := standalone(t, fmt.Sprintf("--memory-limit=%d", limit), "--max-value-bytes=1MiB")
	if got := metricValue(t, m, "rolis_memory_limit_bytes", nil); got != float64(limit) {
		t.Fatalf("rolis_memory_limit_bytes = %v, want %d", got, limit)
	}

	// A small bank, to call a writing and a read-only procedure under pressure.
	call(t, cl, "bank.setup", 10, 5)
	call(t, cl, "bank.load", 0)

	value := strings.Repeat("m", 512<<10)
	var refused error
	puts := 0
	// 1 GiB at most: far past the limit if nothing refuses.
	for ; puts < 2048 && refused == nil; puts++ {
		refused = cl.Put(ctxFor(t, 10*time.Second), []byte(fmt.Sprintf("big-%05d", puts)), []byte(value))
	}
	if refused == nil {
		t.Fatalf("%d puts of 512 KiB (RSS now %d MiB, limit %d MiB) were all accepted", puts,
			residentBytes(t, m.Pid())>>20, limit>>20)
	}
	t.Logf("refused after %d puts at RSS %d MiB (limit %d MiB): %v", puts-1, residentBytes(t, m.Pid())>>20,
		limit>>20, refused)
	wantCode(t, "put near the limit", refused, codes.ResourceExhausted)
	for _, part := range []string{"memory nearly full", "MiB limit", "writes refused until it drops below",
		"raise resources.limits.memory (--memory-limit) or delete data"} {
		if !strings.Contains(refused.Error(), part) {
			t.Errorf("refusal %q does not say %q", refused.Error(), part)
		}
	}
	// Refused again (the flag is sticky until memory drops), and counted.
	wantCode(t, "second put", cl.Put(ctxFor(t, 10*time.Second), []byte("small"), []byte("v")), codes.ResourceExhausted)

	if v, ok := mustGet(t, cl, "big-00000"); !ok || len(v) != len(value) {
		t.Fatalf("read under memory pressure: found=%v len=%d", ok, len(v))
	}
	if _, ok := mustGet(t, cl, "small"); ok {
		t.Fatal("a refused put was applied")
	}
	if found, err := cl.Delete(ctxFor(t, 10*time.Second), []byte("big-00001")); err != nil || !found {
		t.Fatalf("delete under memory pressure: found=%v err=%v", found, err)
	}
	_, err := cl.Call(ctxFor(t, 10*time.Second), "bank.transfer", 1, 2, 1)
	wantCode(t, "writing procedure under memory pressure", err, codes.ResourceExhausted)
	if out := call(t, cl, "bank.audit"); len(out) == 0 {
		t.Fatal("bank.audit returned nothing")
	}
	if !m.Running() {
		t.Fatal("rolisd exited")
	}
	if got := metricValue(t, m, "rolis_aborts_total", map[string]string{"reason": "memory"}); got < 3 {
		t.Errorf("rolis_aborts_total{reason=memory} = %v, want >= 3", got)
	}
	if got := metricValue(t, m, "rolis_memory_resident_bytes", nil); got < 0.9*float64(limit) {
		t.Errorf("rolis_memory_resident_bytes = %v, want >= 90%% of %d", got, limit)
	}
}

// Without a limit (and no memory cgroup limit here) no memory gauges appear.
func TestNoMemoryLimitMeansNoMemoryGauges(t *testing.T) {
	m, cl := standalone(t, "--memory-limit=0")
	mustPut(t, cl, "k", "v")
	fams := scrape(t, m)
	for _, name := range []string{"rolis_memory_limit_bytes", "rolis_memory_resident_bytes"} {
		if _, ok := fams[name]; ok {
			t.Errorf("%s exported with --memory-limit=0", name)
		}
	}
}
