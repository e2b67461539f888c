package replication_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Setting: member 3 runs without an accept stream (--accept-stream-port=-1),
// so the leader's accepts reach it on gRPC's Replicate call, and member 2
// on its accept stream (a framed TCP connection of its own). Faults: member 2
// killed (the majority then rests on member 3's gRPC path), restarted at a
// new accept stream port the leader learns from its Hello.
// Invariants: writes are acknowledged on either path; the leader says which
// path each member's accepts take; no acknowledged transaction is lost, the
// bank total is kept and histories are linearizable.
func TestAcceptsTakeTheStreamOrTheReplicationPortPerMember(t *testing.T) {
	cl := startCluster(t, clusterOptions{memberArgs: func(id int) []string {
		if id == 3 {
			return []string{"--accept-stream-port=-1"}
		}
		return nil
	}})
	leader := elect(t, cl)
	if leader != 1 {
		t.Fatalf("member %d leads, wanted 1", leader)
	}
	w := newWorkload(t, cl.clientAddrs())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w.Setup(ctx)
	w.Start(3, 1, 2, 7)
	onStream := func(member int) int {
		return strings.Count(cl.member(1).Log(), fmt.Sprintf("accepts to member %d (stream 0) go on its accept stream", member))
	}
	waitFor(t, 5*time.Second, "the leader's accepts to member 2 on its accept stream", func() bool { return onStream(2) > 0 })
	if onStream(3) != 0 {
		t.Fatalf("accepts to member 3 (without an accept stream) went to one:\n%s", cl.member(1).LogTail(30))
	}

	// Member 3 keeps up through the replication port before member 2 goes
	// (it replays up to the leader's watermark).
	time.Sleep(time.Second)
	if err := cl.waitCaughtUp(leader, 10*time.Second); err != nil {
		t.Fatalf("member 3, on the replication port: %v", err)
	}

	// Member 2 down: every acknowledgement now needs member 3's replies on
	// the replication port.
	if _, err := cl.member(2).Kill(); err != nil {
		t.Fatal(err)
	}
	acked := w.Acked()
	waitFor(t, 10*time.Second, "writes acknowledged with member 2 down", func() bool { return w.Acked() > acked+100 })

	// Back at another port (any free one): the leader learns it from the
	// restarted member's Hello and goes back to the accept stream.
	if err := cl.member(2).Restart(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatalf("member 2 after its restart: %v", err)
	}
	waitFor(t, 15*time.Second, "the accept stream of the restarted member 2 in use", func() bool {
		return streamConnections(t, cl, 2) > 0
	})
	if n := streamConnections(t, cl, 3); n != 0 {
		t.Fatalf("member 3 (without an accept stream) serves %v accept stream connections", n)
	}
	time.Sleep(500 * time.Millisecond)
	w.Stop()
	t.Log(w.check(cl, leader))
}

// streamConnections reads from a member's metrics how many accept stream
// connections it serves (-1: unreadable).
func streamConnections(t *testing.T, cl *cluster, member int) float64 {
	return metricValue(t, cl, member, "rolis_replication_accept_stream_connections")
}

// metricValue reads a metric without labels from a member's /metrics
// (-1: unreadable; the test fails when the member does not export it).
func metricValue(t *testing.T, cl *cluster, member int, metric string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	code, body, err := cl.member(member).MetricsGet(ctx, "/metrics")
	if err != nil || code != 200 {
		return -1
	}
	name := metric + " "
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name) {
			v, err := strconv.ParseFloat(strings.TrimPrefix(line, name), 64)
			if err == nil {
				return v
			}
		}
	}
	t.Fatalf("member %d's metrics have no %s", member, metric)
	return -1
}

// waitFor polls cond every 50 ms until it holds, or fails the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
