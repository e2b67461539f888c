package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// RetryPolicy bounds how a transaction is retried after ErrAborted (and
// after a not-leader redirect). Delays grow exponentially with "equal
// jitter": attempt n waits d/2 + rand[0, d/2) where
// d = min(MaxDelay, BaseDelay * Multiplier^n), so that contending clients
// spread out while the expected delay still grows.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts including the first; 0 means 10.
	// A negative value disables retries.
	MaxAttempts int
	// BaseDelay is the delay before the first retry; 0 means 1ms.
	BaseDelay time.Duration
	// MaxDelay caps one delay; 0 means 200ms.
	MaxDelay time.Duration
	// Multiplier of the delay per attempt; 0 means 2.
	Multiplier float64
	// Budget, if not nil, is shared by all calls of a client and stops
	// retries when too many recent attempts failed (see RetryBudget).
	Budget *RetryBudget
}

// DefaultRetryPolicy is used when Config.Retry is the zero value.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 10, BaseDelay: time.Millisecond, MaxDelay: 200 * time.Millisecond,
		Multiplier: 2, Budget: NewRetryBudget(100, 0.1)}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 10
	}
	if p.MaxAttempts < 0 {
		p.MaxAttempts = 1
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 200 * time.Millisecond
	}
	if p.MaxDelay < p.BaseDelay {
		p.MaxDelay = p.BaseDelay
	}
	if p.Multiplier < 1 {
		p.Multiplier = 2
	}
	return p
}

// Delay returns the wait before retry number retry (0 for the first retry)
// for a random draw u in [0, 1).
func (p RetryPolicy) Delay(retry int, u float64) time.Duration {
	p = p.withDefaults()
	d := float64(p.BaseDelay) * math.Pow(p.Multiplier, float64(retry))
	if d > float64(p.MaxDelay) || math.IsInf(d, 0) || math.IsNaN(d) {
		d = float64(p.MaxDelay)
	}
	return time.Duration(d/2 + u*d/2)
}

// RetryBudget is a token bucket shared by all the calls of one client, in the
// manner of gRPC's retry throttling: it starts full with max tokens, every
// retryable failure takes one token, every success gives back ratio tokens,
// and retries are allowed only while more than half the tokens remain. Under
// a storm of conflicts (or a server that aborts everything) clients stop
// multiplying the load; in normal running it never binds.
type RetryBudget struct {
	mu     sync.Mutex
	max    float64
	ratio  float64
	tokens float64
}

// NewRetryBudget returns a full budget of max tokens refilled by ratio per success.
func NewRetryBudget(max, ratio float64) *RetryBudget {
	return &RetryBudget{max: max, ratio: ratio, tokens: max}
}

// OnSuccess credits a successful call.
func (b *RetryBudget) OnSuccess() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.tokens = math.Min(b.max, b.tokens+b.ratio)
	b.mu.Unlock()
}

// OnFailure debits a retryable failure and reports whether a retry is allowed.
func (b *RetryBudget) OnFailure() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = math.Max(0, b.tokens-1)
	return b.tokens > b.max/2
}

// Tokens returns the tokens left (for tests and metrics).
func (b *RetryBudget) Tokens() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens
}

// retryable reports whether a failed attempt may be run again from scratch.
func retryable(err error) bool {
	if errors.Is(err, ErrTooManyRedirects) || errors.Is(err, ErrRetriesExhausted) {
		return false
	}
	var r retryAnyway
	return errors.As(err, &r) || errors.Is(err, ErrAborted) || errors.Is(err, ErrNotLeader) || notSent(err)
}

// retryAnyway marks an error after which the whole attempt may run again
// although its code alone would not say so (a Begin refused for lack of
// room: RESOURCE_EXHAUSTED before anything happened).
type retryAnyway struct{ error }

func (r retryAnyway) Unwrap() error { return r.error }

// sleepFunc is replaced by tests.
var sleepFunc = func(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// runWithRetry calls attempt until it succeeds, fails with an error that is
// not retryable, or the policy, the budget or ctx says stop. attempt gets
// the attempt number (0 first).
func runWithRetry(ctx context.Context, p RetryPolicy, attempt func(n int) error) error {
	p = p.withDefaults()
	var err error
	for n := 0; ; n++ {
		err = attempt(n)
		if err == nil {
			p.Budget.OnSuccess()
			return nil
		}
		if !retryable(err) {
			return err
		}
		if n+1 >= p.MaxAttempts {
			return fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, n+1, err)
		}
		if !p.Budget.OnFailure() {
			return fmt.Errorf("%w (retry budget spent) after %d attempts: %w", ErrRetriesExhausted, n+1, err)
		}
		if errors.Is(err, ErrNotLeader) && LeaderOf(err) != "" {
			continue // the redirect itself is the remedy: no need to wait
		}
		if serr := sleepFunc(ctx, p.Delay(n, rand.Float64())); serr != nil {
			return fmt.Errorf("%w: %w", serr, err)
		}
	}
}
