package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rolisdb/rolis/pkg/client"
	"google.golang.org/grpc/codes"
)

// Outcomes land in the bucket of the time they came back, from the start of
// the measured window; the workers' buckets add up, with the commits'
// p50/p99 within 10%.
func TestTimelineBucketsByReplyTime(t *testing.T) {
	start := time.Unix(1000, 0)
	w := 100 * time.Millisecond
	a, b := newTimeline(start, w, time.Second), newTimeline(start, w, time.Second)
	a.record(start.Add(-time.Millisecond), tlCommitted, time.Millisecond, 1) // warm-up: not counted
	for i := range 100 {
		a.record(start.Add(10*time.Millisecond), tlCommitted, time.Duration(i+1)*time.Millisecond, 1)
	}
	b.record(start.Add(99*time.Millisecond), tlAborted, 0, 1)
	b.record(start.Add(350*time.Millisecond), tlFailed, 0, 32)
	b.record(start.Add(1500*time.Millisecond), tlFailed, 0, 1) // a failure after the window

	pts := mergeTimelines([]*timeline{a, b}, time.Second)
	if len(pts) != 16 {
		t.Fatalf("%d buckets, want 16 (the window, then up to the last failure)", len(pts))
	}
	p := pts[0]
	if p.T != 0 || p.Committed != 100 || p.Aborted != 1 || p.Failed != 0 {
		t.Fatalf("bucket 0: %+v", p)
	}
	if p.P50US < 45000 || p.P50US > 56000 || p.P99US < 89000 || p.P99US > 110000 {
		t.Errorf("bucket 0: p50 %v us, p99 %v us; want about 50 ms and 99 ms", p.P50US, p.P99US)
	}
	if pts[3].Failed != 32 || pts[3].Committed != 0 || pts[3].P99US != 0 {
		t.Errorf("bucket 3: %+v", pts[3])
	}
	if pts[15].Failed != 1 || fmt.Sprintf("%.1f", pts[15].T) != "1.5" {
		t.Errorf("bucket 15: %+v", pts[15])
	}
	// Nothing after the window: the buckets stop at its end.
	if n := len(mergeTimelines([]*timeline{newTimeline(start, w, time.Second)}, time.Second)); n != 10 {
		t.Errorf("an empty run has %d buckets, want 10", n)
	}
}

// A stream is given up for routing failures only; a transaction's own
// failures (conflicts, bad input) keep it.
func TestStreamBrokenOnlyForRoutingFailures(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&client.Error{Code: codes.Aborted}, false},
		{&client.Error{Code: codes.InvalidArgument}, false},
		{&client.Error{Code: codes.FailedPrecondition, Message: "workload bank is not set up"}, false},
		{&client.Error{Code: codes.FailedPrecondition, Message: "not the leader", Leader: "a:1"}, true},
		{&client.Error{Code: codes.Unavailable, Message: "no leader is open for writes"}, true},
		{&client.Error{Code: codes.Unknown, Message: "transport is closing"}, true},
		{client.ErrClosed, true},
		{fmt.Errorf("stream: %w", context.Canceled), true},
		{errors.New("something else"), false},
	} {
		if got := streamBroken(c.err); got != c.want {
			t.Errorf("streamBroken(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if reopenDelay(0) != 0 || reopenDelay(1) != 5*time.Millisecond || reopenDelay(20) != 100*time.Millisecond {
		t.Errorf("reopen delays %v %v %v", reopenDelay(0), reopenDelay(1), reopenDelay(20))
	}
}

// After a broken stream the client moves to the next endpoint, unless a
// not-leader reply moved it already.
func TestFollowerMovesOnToTheNextEndpoint(t *testing.T) {
	eps := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
	c, err := client.New(context.Background(), client.Config{Endpoints: append([]string(nil), eps...)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := &follower{c: c, endpoints: eps}
	f.moveOn(eps[0])
	if c.Target() != eps[1] {
		t.Fatalf("after %s broke: target %s, want %s", eps[0], c.Target(), eps[1])
	}
	f.moveOn(eps[0]) // a stale report: the target moved already
	if c.Target() != eps[1] {
		t.Fatalf("a stale report moved the target to %s", c.Target())
	}
	f.moveOn(eps[1])
	if c.Target() != eps[2] {
		t.Fatalf("after %s broke: target %s, want %s", eps[1], c.Target(), eps[2])
	}
	f.moveOn(eps[2])
	if c.Target() != eps[0] {
		t.Fatalf("after %s broke: target %s, want %s (round)", eps[2], c.Target(), eps[0])
	}
}

func TestTimelineFlagIsChecked(t *testing.T) {
	g := &globals{endpoints: "127.0.0.1:1", timeout: time.Second}
	for _, tl := range []time.Duration{time.Microsecond, 20 * time.Second} {
		o := benchOptions{workload: "ycsbpp", seconds: 10, keys: 10, pipeline: 1, batch: 1, rmw: "oneshot",
			zipf: -1, timeline: tl, noLoad: true}
		err := runBench(context.Background(), g, o, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "--timeline") {
			t.Errorf("--timeline=%v: %v", tl, err)
		}
	}
}
