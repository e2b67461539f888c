package server_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rolisdb/rolis/pkg/client"
)

// Two interactive transactions read the same key and both write it: the
// first to commit wins, the second aborts (ErrAborted) and writes nothing.
// The engine allows one open transaction per worker (one worker is kept for
// one-shots), so these tests run with enough workers.

func TestWriteWriteConflict_SecondCommitAborts(t *testing.T) {
	_, cl := standalone(t, "--worker-threads=4")
	ctx := ctxFor(t, 20*time.Second)
	mustPut(t, cl, "k", "0")
	t1, err := cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range []*client.Tx{t1, t2} {
		if _, _, err := tx.Get(ctx, []byte("k")); err != nil {
			t.Fatal(err)
		}
	}
	if err := t1.Put(ctx, []byte("k"), []byte("t1")); err != nil {
		t.Fatal(err)
	}
	// t2's write may already fail (a locked record), or its commit will.
	err = t2.Put(ctx, []byte("k"), []byte("t2"))
	if _, err := t1.Commit(ctx); err != nil {
		t.Fatalf("first commit: %v", err)
	}
	if err == nil {
		_, err = t2.Commit(ctx)
	}
	if !errors.Is(err, client.ErrAborted) {
		t.Fatalf("second writer: %v, want ErrAborted", err)
	}
	if v, _ := mustGet(t, cl, "k"); v != "t1" {
		t.Fatalf("k = %q, want t1", v)
	}
}

// t1 reads x; t2 writes x and commits; t1 then writes y and commits: t1's
// read is stale, so t1 aborts and y is not written.
func TestReadWriteConflict_StaleReaderAborts(t *testing.T) {
	_, cl := standalone(t, "--worker-threads=4")
	ctx := ctxFor(t, 20*time.Second)
	mustPut(t, cl, "x", "0")
	t1, err := cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := t1.Get(ctx, []byte("x")); err != nil || string(v) != "0" {
		t.Fatalf("t1 read x: %q %v", v, err)
	}
	mustPut(t, cl, "x", "1") // t2, one-shot
	if err := t1.Put(ctx, []byte("y"), []byte("from t1")); err != nil && !errors.Is(err, client.ErrAborted) {
		t.Fatal(err)
	} else if err == nil {
		_, err = t1.Commit(ctx)
		if !errors.Is(err, client.ErrAborted) {
			t.Fatalf("stale reader committed: %v", err)
		}
	}
	if _, ok := mustGet(t, cl, "y"); ok {
		t.Fatal("the aborted transaction's write is visible")
	}
}

// A read-only transaction reads a consistent snapshot and never aborts.
func TestReadOnlyTxnCommitsDespiteConcurrentWrites(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 20*time.Second)
	mustPut(t, cl, "x", "0")
	tx, err := cl.Begin(ctx, client.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tx.Get(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	mustPut(t, cl, "x", "1")
	if _, _, err := tx.Get(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("read-only commit: %v", err)
	}
}

// Many clients increment one counter through Txn (read, then write the
// value plus one): conflicts are retried by the client, and no increment is
// lost.
func TestTxnRetriesConflictsAndLosesNoIncrement(t *testing.T) {
	_, cl := standalone(t, "--worker-threads=9")
	cl2 := newClient(t, cl.Target(), func(c *client.Config) {
		c.Retry = client.RetryPolicy{MaxAttempts: 200, BaseDelay: 100 * time.Microsecond, MaxDelay: 5 * time.Millisecond}
	})
	ctx := ctxFor(t, 60*time.Second)
	mustPut(t, cl2, "ctr", "0")
	const workers, each = 8, 25
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := cl2.Txn(ctx, func(tx *client.Tx) error {
					v, _, err := tx.Get(ctx, []byte("ctr"))
					if err != nil {
						return err
					}
					var n int
					fmt.Sscan(string(v), &n)
					return tx.Put(ctx, []byte("ctr"), []byte(fmt.Sprint(n+1)))
				})
				if err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(err)
	}
	if v, _ := mustGet(t, cl2, "ctr"); v != fmt.Sprint(workers*each) {
		t.Fatalf("counter = %s, want %d", v, workers*each)
	}
}

// The same with one-shot PUT_IF compare-and-set loops.
func TestPutIfCompareAndSetLosesNoIncrement(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 60*time.Second)
	mustPut(t, cl, "cas", "0")
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; {
				v, _, err := cl.Get(ctx, []byte("cas"))
				if err != nil {
					errs <- err
					return
				}
				var n int
				fmt.Sscan(string(v), &n)
				_, err = cl.Execute(ctx, client.PutIf([]byte("cas"), []byte(fmt.Sprint(n+1)), v))
				switch {
				case err == nil:
					i++
				case errors.Is(err, client.ErrConditionFailed) || errors.Is(err, client.ErrAborted):
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v, _ := mustGet(t, cl, "cas"); v != fmt.Sprint(workers*each) {
		t.Fatalf("counter = %s, want %d", v, workers*each)
	}
}

// A PUT_IF that does not hold ends the transaction without a commit, so
// nothing it read was validated: it writes nothing (not even the PUT before
// it) and returns no results at all, only ConditionFailed.
func TestFailedPutIfWritesNothingAndReturnsNoUnvalidatedReads(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 20*time.Second)
	mustPut(t, cl, "x", "1")
	mustPut(t, cl, "z", "9")
	res, err := cl.Execute(ctx, client.Get([]byte("z")), client.Put([]byte("y"), []byte("written?")),
		client.PutIf([]byte("x"), []byte("3"), []byte("2")))
	if !errors.Is(err, client.ErrConditionFailed) {
		t.Fatalf("err = %v, want ErrConditionFailed", err)
	}
	if res == nil || !res.ConditionFailed || len(res.Results) != 0 {
		t.Fatalf("result %+v: want ConditionFailed and no op results", res)
	}
	if v, _ := mustGet(t, cl, "x"); v != "1" {
		t.Errorf("x = %q, want 1", v)
	}
	if _, ok := mustGet(t, cl, "y"); ok {
		t.Error("y was written by a transaction whose condition failed")
	}
	// The same transaction with the condition holding commits and reads.
	res, err = cl.Execute(ctx, client.Get([]byte("z")), client.PutIf([]byte("x"), []byte("3"), []byte("1")))
	if err != nil || len(res.Results) != 2 || string(res.Results[0].Value) != "9" {
		t.Fatalf("holding condition: %+v, %v", res, err)
	}
}
