package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rolisdb/rolis/pkg/client"
)

// An interactive transaction idle past --txn-idle-timeout is aborted by the
// server: its next call fails with NOT_FOUND, its writes never appear, and
// the server keeps serving.
func TestIdleTransactionExpiresAfterServerIdleTimeout(t *testing.T) {
	m, cl := standalone(t, "--txn-idle-timeout=300ms")
	ctx := ctxFor(t, 20*time.Second)
	tx, err := cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Put(ctx, []byte("idle"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	_, _, err = tx.Get(ctx, []byte("idle"))
	if !errors.Is(err, client.ErrTxnNotFound) {
		t.Fatalf("call on an expired transaction: %v, want ErrTxnNotFound", err)
	}
	if _, err := tx.Commit(ctx); err == nil {
		t.Fatal("an expired transaction committed")
	}
	if _, ok := mustGet(t, cl, "idle"); ok {
		t.Fatal("the expired transaction's write is visible")
	}
	if n := metricValue(t, m, "rolis_aborts_total", map[string]string{"reason": "expired"}); n < 1 {
		t.Errorf("rolis_aborts_total{reason=expired} = %v, want >= 1", n)
	}
	mustPut(t, cl, "after", "ok")
}

// A transaction stays open while it is used more often than the timeout.
func TestActiveTransactionDoesNotExpire(t *testing.T) {
	_, cl := standalone(t, "--txn-idle-timeout=1500ms")
	ctx := ctxFor(t, 20*time.Second)
	tx, err := cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ { // 2.5 s in all, a call every 250 ms
		time.Sleep(250 * time.Millisecond)
		if _, _, err := tx.Get(ctx, []byte("k")); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// Begin's per-transaction idle timeout overrides the server default.
func TestIdleTimeoutRequestedInBeginIsHonoured(t *testing.T) {
	_, cl := standalone(t) // server default 30s
	ctx := ctxFor(t, 20*time.Second)
	tx, err := cl.Begin(ctx, client.IdleTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1 * time.Second)
	if _, _, err := tx.Get(ctx, []byte("k")); !errors.Is(err, client.ErrTxnNotFound) {
		t.Fatalf("after 1s idle with a 200ms timeout: %v", err)
	}
}
