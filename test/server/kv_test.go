package server_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

func TestBinaryIsPresent(t *testing.T) {
	if _, err := testserver.Binary(); err != nil {
		t.Fatal(err)
	}
}

func TestPutGetDeleteRoundTrip(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 20*time.Second)
	if _, ok := mustGet(t, cl, "a"); ok {
		t.Fatal("a exists in a new server")
	}
	mustPut(t, cl, "a", "1")
	if v, ok := mustGet(t, cl, "a"); !ok || v != "1" {
		t.Fatalf("get a = %q %v", v, ok)
	}
	mustPut(t, cl, "a", "2")
	if v, _ := mustGet(t, cl, "a"); v != "2" {
		t.Fatalf("overwrite: a = %q", v)
	}
	// Binary keys and values, and an empty value.
	bk, bv := []byte{0, 1, 0xff, '\n'}, []byte{0xfe, 0, 0}
	if err := cl.Put(ctx, bk, bv); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := cl.Get(ctx, bk); err != nil || !ok || string(v) != string(bv) {
		t.Fatalf("binary key: %q %v %v", v, ok, err)
	}
	if err := cl.Put(ctx, []byte("empty"), nil); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := cl.Get(ctx, []byte("empty")); err != nil || !ok || len(v) != 0 {
		t.Fatalf("empty value: %q %v %v", v, ok, err)
	}
	found, err := cl.Delete(ctx, []byte("a"))
	if err != nil || !found {
		t.Fatalf("delete a: %v %v", found, err)
	}
	if _, ok := mustGet(t, cl, "a"); ok {
		t.Fatal("a still there after delete")
	}
	if found, err := cl.Delete(ctx, []byte("a")); err != nil || found {
		t.Fatalf("second delete: %v %v", found, err)
	}
}

func TestScanReturnsKeysInOrderWithinBoundsAndLimit(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 20*time.Second)
	var ops []client.Op
	for i := 0; i < 50; i++ {
		ops = append(ops, client.Put([]byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprint(i))))
	}
	if _, err := cl.Execute(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	items, err := cl.Scan(ctx, []byte("k010"), []byte("k020"), 0)
	if err != nil || len(items) != 10 {
		t.Fatalf("scan [k010,k020): %d items, %v", len(items), err)
	}
	for i, kv := range items {
		if want := fmt.Sprintf("k%03d", 10+i); string(kv.Key) != want || string(kv.Value) != fmt.Sprint(10+i) {
			t.Fatalf("item %d = %s=%s, want %s", i, kv.Key, kv.Value, want)
		}
	}
	items, err = cl.Scan(ctx, []byte("k045"), nil, 0)
	if err != nil || len(items) != 5 {
		t.Fatalf("unbounded scan from k045: %d items, %v", len(items), err)
	}
	items, err = cl.Scan(ctx, nil, nil, 7)
	if err != nil || len(items) != 7 || string(items[0].Key) != "k000" {
		t.Fatalf("limit 7: %d items, %v", len(items), err)
	}
	// Interactive scan reports that the limit cut it short. (A read-write
	// transaction: a read-only one reads a snapshot that may be a few
	// epochs old and miss the writes just made.)
	err = cl.Txn(ctx, func(tx *client.Tx) error {
		items, more, err := tx.Scan(ctx, []byte("k000"), nil, 10)
		if err != nil {
			return err
		}
		if len(items) != 10 || !more {
			return fmt.Errorf("interactive scan: %d items, more=%v", len(items), more)
		}
		items, more, err = tx.Scan(ctx, []byte("k040"), nil, 100)
		if err == nil && (len(items) != 10 || more) {
			return fmt.Errorf("interactive scan to the end: %d items, more=%v", len(items), more)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestInteractiveTxnReadsItsOwnWritesAndCommitsAtomically(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 20*time.Second)
	mustPut(t, cl, "x", "old")
	tx, err := cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Put(ctx, []byte("x"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put(ctx, []byte("y"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := tx.Get(ctx, []byte("x")); err != nil || !ok || string(v) != "new" {
		t.Fatalf("own write: %q %v %v", v, ok, err)
	}
	// Not visible outside before commit.
	if v, _ := mustGet(t, cl, "x"); v != "old" {
		t.Fatalf("uncommitted write visible: x = %q", v)
	}
	if _, ok := mustGet(t, cl, "y"); ok {
		t.Fatal("uncommitted insert visible")
	}
	info, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.CommitTS == 0 {
		t.Errorf("commit ts 0")
	}
	if v, _ := mustGet(t, cl, "x"); v != "new" {
		t.Fatalf("after commit x = %q", v)
	}
	if v, _ := mustGet(t, cl, "y"); v != "1" {
		t.Fatalf("after commit y = %q", v)
	}
	if _, err := tx.Commit(ctx); !errors.Is(err, client.ErrTxnDone) {
		t.Fatalf("second commit: %v", err)
	}
}

func TestRollbackDiscardsWrites(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 20*time.Second)
	tx, err := cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Put(ctx, []byte("r"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustGet(t, cl, "r"); ok {
		t.Fatal("rolled-back write visible")
	}
	if _, _, err := tx.Get(ctx, []byte("r")); !errors.Is(err, client.ErrTxnDone) {
		t.Fatalf("get after rollback: %v", err)
	}
}

func TestTxnHelperCommitsAndReturnsFunctionErrors(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 20*time.Second)
	err := cl.Txn(ctx, func(tx *client.Tx) error {
		return tx.Put(ctx, []byte("t"), []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := mustGet(t, cl, "t"); v != "v" {
		t.Fatalf("t = %q", v)
	}
	boom := errors.New("boom")
	err = cl.Txn(ctx, func(tx *client.Tx) error {
		if err := tx.Put(ctx, []byte("t"), []byte("w")); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("err %v", err)
	}
	if v, _ := mustGet(t, cl, "t"); v != "v" {
		t.Fatalf("failed txn leaked a write: t = %q", v)
	}
}

func TestReadOnlyTxnRejectsWrites(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 20*time.Second)
	tx, err := cl.Begin(ctx, client.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	err = tx.Put(ctx, []byte("k"), []byte("v"))
	if !errors.Is(err, client.ErrFailedPrecondition) || errors.Is(err, client.ErrNotLeader) {
		t.Fatalf("write in read-only txn: %v", err)
	}
}

func TestExecuteWithPutIfWritesOnlyWhenEveryConditionHolds(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 20*time.Second)
	mustPut(t, cl, "a", "1")
	// Condition holds: both writes happen, reads see the state before.
	res, err := cl.Execute(ctx, client.Get([]byte("a")), client.PutIf([]byte("a"), []byte("2"), []byte("1")),
		client.PutIfAbsent([]byte("b"), []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 3 || string(res.Results[0].Value) != "1" || res.CommitTS == 0 {
		t.Fatalf("results %+v", res)
	}
	if v, _ := mustGet(t, cl, "a"); v != "2" {
		t.Fatalf("a = %q", v)
	}
	// One condition fails: nothing of the transaction is written.
	res, err = cl.Execute(ctx, client.Put([]byte("c"), []byte("c")), client.PutIf([]byte("a"), []byte("3"), []byte("1")))
	if !errors.Is(err, client.ErrConditionFailed) || res == nil || !res.ConditionFailed {
		t.Fatalf("stale PutIf: res %+v err %v", res, err)
	}
	if v, _ := mustGet(t, cl, "a"); v != "2" {
		t.Fatalf("a changed by a failed PutIf: %q", v)
	}
	if _, ok := mustGet(t, cl, "c"); ok {
		t.Fatal("a write of a condition-failed transaction was applied")
	}
	if _, err := cl.Execute(ctx, client.PutIfAbsent([]byte("b"), []byte("y"))); !errors.Is(err, client.ErrConditionFailed) {
		t.Fatalf("PutIfAbsent on a present key: %v", err)
	}
	if v, _ := mustGet(t, cl, "b"); v != "x" {
		t.Fatalf("b = %q", v)
	}
}

func TestExecuteMixesReadsWritesDeletesAndScans(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 20*time.Second)
	mustPut(t, cl, "m1", "a")
	mustPut(t, cl, "m2", "b")
	res, err := cl.Execute(ctx,
		client.Delete([]byte("m1")), client.Put([]byte("m3"), []byte("c")),
		client.Get([]byte("m1")), client.Scan([]byte("m"), []byte("n"), 0))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Results[0].Found || res.Results[2].Found {
		t.Errorf("delete then get in one txn: %+v", res.Results)
	}
	var keys []string
	for _, kv := range res.Results[3].Items {
		keys = append(keys, string(kv.Key))
	}
	if fmt.Sprint(keys) != "[m2 m3]" {
		t.Errorf("scan in the txn sees its own writes: %v", keys)
	}
}

func TestTablesAreSeparateKeySpaces(t *testing.T) {
	_, cl := standalone(t, "--tables=orders,users")
	ctx := ctxFor(t, 20*time.Second)
	if err := cl.Table("orders").Put(ctx, []byte("k"), []byte("o")); err != nil {
		t.Fatal(err)
	}
	if err := cl.Table("users").Put(ctx, []byte("k"), []byte("u")); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]string{"orders": "o", "users": "u"} {
		v, ok, err := cl.Table(table).Get(ctx, []byte("k"))
		if err != nil || !ok || string(v) != want {
			t.Errorf("%s: %q %v %v", table, v, ok, err)
		}
	}
	if _, ok := mustGet(t, cl, "k"); ok {
		t.Error("default table sees another table's key")
	}
}

func TestPipelineRunsManyTransactionsOnOneStream(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 30*time.Second)
	p, err := cl.NewPipeline(ctx, client.PipelineOptions{MaxInFlight: 32})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprintf("p%05d", i))
		if err := p.ExecuteAsync(ctx, []client.Op{client.Put(k, k), client.Get(k)}, func(r *client.Result, err error) {
			if err == nil && (len(r.Results) != 2 || string(r.Results[1].Value) != string(k)) {
				err = fmt.Errorf("%s: results %+v", k, r.Results)
			}
			errs <- err
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	items, err := cl.Scan(ctx, []byte("p"), []byte("q"), 10000)
	if err != nil || len(items) != n {
		t.Fatalf("%d of %d keys present, %v", len(items), n, err)
	}
}
