package server_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
	"google.golang.org/grpc/codes"
)

// replicatedLeader starts three members with the built-in election and
// returns the cluster and its leader. The election timeout (2 s) is longer
// than the tests' pauses: followers resumed after a short pause must not
// campaign at once (a new epoch would depose the leader, and its waiting
// replies would rightly get "outcome unknown").
func replicatedLeader(t *testing.T, grace string) (*testserver.Cluster, *testserver.Member) {
	t.Helper()
	c := testserver.Start(t, testserver.Options{Members: 3, Args: []string{
		"--election=builtin", "--election-timeout=2s", "--shutdown-grace=" + grace}})
	admin, err := client.NewAdmin(context.Background(), client.Config{Endpoints: c.AdminAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range c.Members {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := admin.Status(ctx, m.AdminAddr)
			cancel()
			if err == nil && st.GetRole() == rolisv1.Role_LEADER {
				return c, m
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no leader within 60s")
	return nil, nil
}

// putAsync writes key on the leader without retries and reports the error.
func putAsync(t *testing.T, addr, key string) <-chan error {
	cl := newClient(t, addr, func(cfg *client.Config) { cfg.Retry = client.RetryPolicy{MaxAttempts: -1} })
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done <- cl.Put(ctx, []byte(key), []byte("v"))
	}()
	return done
}

func pauseFollowers(t *testing.T, c *testserver.Cluster, leader *testserver.Member) []*testserver.Member {
	t.Helper()
	var paused []*testserver.Member
	for _, m := range c.Members {
		if m != leader {
			if err := m.Pause(); err != nil {
				t.Fatal(err)
			}
			paused = append(paused, m)
		}
	}
	return paused
}

// Fault: SIGTERM on a leader while a committed write waits for its
// followers (both paused). Invariant: shutdown waits for replication (up to
// --shutdown-grace): when a follower comes back within it, the write is
// acknowledged OK, and the leader then exits 0.
func TestSIGTERMOnLeader_WriteWaitingForReplicationIsAcknowledgedWhenFollowersReturnWithinGrace(t *testing.T) {
	c, leader := replicatedLeader(t, "10s")
	mustPut(t, newClient(t, leader.ClientAddr), "warm", "up")
	paused := pauseFollowers(t, c, leader)
	done := putAsync(t, leader.ClientAddr, "during-shutdown")
	time.Sleep(300 * time.Millisecond) // committed on the leader, waiting for the watermark
	select {
	case err := <-done:
		t.Fatalf("the write returned with both followers paused: %v", err)
	default:
	}
	if err := leader.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	for _, m := range paused {
		if err := m.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write waiting during shutdown: %v, want it acknowledged", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the write got no reply")
	}
	st, err := leader.Wait(15 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.ExitCode() != 0 {
		t.Errorf("leader exit code %d", st.ExitCode())
	}
}

// Fault: SIGTERM on a leader whose followers stay paused. Invariant: after
// --shutdown-grace the waiting write gets UNKNOWN with "outcome unknown"
// (never UNAVAILABLE, which a client may take for "not applied"), and the
// leader exits 0 soon after.
func TestSIGTERMOnLeader_WriteNeverReplicatedGetsOutcomeUnknownAfterGrace(t *testing.T) {
	c, leader := replicatedLeader(t, "1s")
	mustPut(t, newClient(t, leader.ClientAddr), "warm", "up")
	paused := pauseFollowers(t, c, leader)
	t.Cleanup(func() {
		for _, m := range paused {
			m.Resume()
		}
	})
	done := putAsync(t, leader.ClientAddr, "lost-or-not")
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	if err := leader.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the write got no reply")
	}
	waited := time.Since(start)
	wantCode(t, "write never replicated", err, codes.Unknown)
	if err != nil && !strings.Contains(err.Error(), "outcome unknown") {
		t.Errorf("error does not say the outcome is unknown: %v", err)
	}
	if waited < 900*time.Millisecond {
		t.Errorf("the reply came %v after SIGTERM, before the 1s grace", waited)
	}
	st, werr := leader.Wait(15 * time.Second)
	if werr != nil {
		t.Fatal(werr)
	}
	if st.ExitCode() != 0 {
		t.Errorf("leader exit code %d", st.ExitCode())
	}
	t.Logf("reply after %v: %v", waited.Round(time.Millisecond), err)
}
