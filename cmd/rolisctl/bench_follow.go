package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rolisdb/rolis/pkg/client"
	"google.golang.org/grpc/codes"
)

// A pipelined or batched bench worker keeps running across a leader
// failover (docs/benchmarks.md, "Failover timeline"): a stream does not
// follow the leader by itself (pkg/client, Pipeline), so when a stream's
// member stops serving, the worker counts the failures, closes the stream
// and opens a new one where the client now points: at the leader a
// not-leader reply named (pkg/client moves its target there), or else at
// the next --endpoint. Unary calls follow the leader through pkg/client's
// redirects and endpoint rotation already.

// streamBroken reports whether err, a transaction's outcome on a stream,
// says the stream's member cannot serve it: not the leader, unavailable
// (no leader open, or unreachable), the stream ended or stalled. The other
// errors (aborts, bad input) are the transaction's own.
func streamBroken(err error) bool {
	if err == nil {
		return false
	}
	var e *client.Error
	return errors.Is(err, client.ErrNotLeader) || errors.Is(err, client.ErrUnavailable) ||
		errors.Is(err, client.ErrClosed) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &e) && e.Code == codes.Unknown) // a transport failure
}

// follower moves the client's target after a broken stream and paces the
// reopening. One follower serves every worker of a run.
type follower struct {
	c         *client.Client
	endpoints []string

	mu   sync.Mutex
	next int
}

// moveOn points the client elsewhere after a stream to `from` broke, unless
// a not-leader reply (or another worker) moved it already.
func (f *follower) moveOn(from string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.c.Target() != from || len(f.endpoints) < 2 {
		return // already elsewhere, or only one address (a Service: it moves by itself)
	}
	for range f.endpoints {
		f.next = (f.next + 1) % len(f.endpoints)
		if ep := f.endpoints[f.next]; ep != from {
			_ = f.c.SetTarget(ep)
			return
		}
	}
}

// reopenDelay is the wait before the n-th new stream in a row that served
// nothing (n = 0 after a stream that served): 0, then 5 ms doubling to
// 100 ms. While no leader is open each new stream's window fails at once,
// so the pause bounds the failures counted; its cap bounds how late the
// worker finds the new leader open (each of its streams: at most 100 ms).
func reopenDelay(n int) time.Duration {
	if n == 0 {
		return 0
	}
	return min(5*time.Millisecond<<min(n-1, 6), 100*time.Millisecond)
}

// sleepUntil waits d, but not past the deadline nor ctx; false if either
// came first.
func sleepUntil(ctx context.Context, d time.Duration, deadline time.Time) bool {
	if d <= 0 {
		return time.Now().Before(deadline) && ctx.Err() == nil
	}
	t := time.NewTimer(min(d, time.Until(deadline)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return time.Now().Before(deadline)
	}
}

// pauseAfter waits a little after a unary call found no member to serve it
// (a failover under way), rather than asking again at once.
func pauseAfter(ctx context.Context, err error, deadline time.Time) {
	if streamBroken(err) {
		sleepUntil(ctx, 10*time.Millisecond, deadline)
	}
}
