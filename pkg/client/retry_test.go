package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestDelayGrowsExponentiallyWithEqualJitter(t *testing.T) {
	p := RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 100 * time.Millisecond, Multiplier: 2}
	for n, full := range []time.Duration{1, 2, 4, 8, 16, 32, 64, 100, 100} {
		full *= time.Millisecond
		lo, hi := p.Delay(n, 0), p.Delay(n, 0.999999)
		if lo != full/2 {
			t.Errorf("retry %d: min delay %v, want %v", n, lo, full/2)
		}
		if hi >= full || hi < full*99/100 {
			t.Errorf("retry %d: max delay %v, want just under %v", n, hi, full)
		}
	}
	if d := p.Delay(10000, 0.5); d > 100*time.Millisecond {
		t.Errorf("huge retry count overflowed the cap: %v", d)
	}
}

func TestRetryBudgetStopsRetriesUnderAStormAndRefills(t *testing.T) {
	b := NewRetryBudget(10, 0.5)
	allowed := 0
	for b.OnFailure() {
		allowed++
	}
	if allowed != 4 { // 10 -> 5 tokens: retries allowed while tokens > 5
		t.Fatalf("allowed %d retries, want 4", allowed)
	}
	for range 4 {
		b.OnSuccess()
	}
	if !b.OnFailure() {
		t.Fatal("budget did not refill after successes")
	}
}

func noSleep(t *testing.T) *[]time.Duration {
	var slept []time.Duration
	old := sleepFunc
	sleepFunc = func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return ctx.Err() }
	t.Cleanup(func() { sleepFunc = old })
	return &slept
}

func aborted() error { return wrapErr("Commit", status.Error(codes.Aborted, "conflict"), nil) }

func TestRunWithRetryRetriesAbortsThenSucceeds(t *testing.T) {
	slept := noSleep(t)
	calls := 0
	err := runWithRetry(context.Background(), RetryPolicy{MaxAttempts: 5}, func(n int) error {
		if n != calls {
			t.Fatalf("attempt %d, want %d", n, calls)
		}
		calls++
		if calls < 3 {
			return aborted()
		}
		return nil
	})
	if err != nil || calls != 3 || len(*slept) != 2 {
		t.Fatalf("err %v calls %d sleeps %v", err, calls, *slept)
	}
}

func TestRunWithRetryGivesUpAfterMaxAttempts(t *testing.T) {
	noSleep(t)
	calls := 0
	err := runWithRetry(context.Background(), RetryPolicy{MaxAttempts: 4}, func(int) error { calls++; return aborted() })
	if calls != 4 || !errors.Is(err, ErrRetriesExhausted) || !errors.Is(err, ErrAborted) {
		t.Fatalf("calls %d err %v", calls, err)
	}
}

func TestRunWithRetryDoesNotRetryOtherErrors(t *testing.T) {
	noSleep(t)
	for _, e := range []error{
		wrapErr("Put", status.Error(codes.InvalidArgument, "key too long"), nil),
		wrapErr("Commit", status.Error(codes.Unavailable, "error reading from server: EOF"), nil),
		wrapErr("Get", status.Error(codes.NotFound, "no txn"), nil),
		ErrConditionFailed,
	} {
		calls := 0
		err := runWithRetry(context.Background(), RetryPolicy{MaxAttempts: 5}, func(int) error { calls++; return e })
		if calls != 1 || err != e {
			t.Errorf("%v: calls %d err %v", e, calls, err)
		}
	}
}

func TestRunWithRetryHonoursTheBudget(t *testing.T) {
	noSleep(t)
	b := NewRetryBudget(4, 0.1)
	calls := 0
	err := runWithRetry(context.Background(), RetryPolicy{MaxAttempts: 100, Budget: b}, func(int) error { calls++; return aborted() })
	if !errors.Is(err, ErrRetriesExhausted) || calls != 2 {
		t.Fatalf("calls %d err %v", calls, err)
	}
}

func TestRunWithRetryStopsWhenContextEnds(t *testing.T) {
	noSleep(t)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := runWithRetry(ctx, RetryPolicy{MaxAttempts: 100}, func(int) error { calls++; cancel(); return aborted() })
	if calls != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, ErrAborted) {
		t.Fatalf("calls %d err %v", calls, err)
	}
}

func TestRunWithRetryRedirectsWithoutWaiting(t *testing.T) {
	slept := noSleep(t)
	calls := 0
	err := runWithRetry(context.Background(), RetryPolicy{MaxAttempts: 3}, func(int) error {
		calls++
		if calls == 1 {
			return &Error{Code: codes.FailedPrecondition, Leader: "h:1"}
		}
		return nil
	})
	if err != nil || calls != 2 || len(*slept) != 0 {
		t.Fatalf("err %v calls %d slept %v", err, calls, *slept)
	}
}
