// Package ledger is the workload and the acknowledged-write ledger that the
// replication and operator tests share: bank transfers, all-account reads
// and unique inserts through pkg/client against real rolisd processes, a
// record of every transaction the cluster acknowledged, and the checks run
// on the members' states after the faults (every acknowledged transaction
// present, the bank total unchanged, single-key histories linearizable with
// porcupine).
package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/rolisdb/rolis/pkg/client"
)

const (
	// Accounts is the number of bank accounts; each starts with Initial.
	Accounts = 10
	Initial  = 1000
)

// Account is the key of bank account i.
func Account(i int) string { return fmt.Sprintf("acct/%02d", i) }

// TB is what the workload needs of a test: a testing.TB, or Ginkgo's
// GinkgoT() (the end-to-end suite).
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
}

// Workload runs the clients and keeps the ledger.
type Workload struct {
	tb  TB
	cfg client.Config
	t0  time.Time

	mu      sync.Mutex
	history []porcupine.Operation
	inserts map[string]bool // acknowledged inserts
	errs    []string        // invariant violations seen while running
	acked   int
	unknown int

	inserters int // inserter ids given so far: each writes keys of its own

	stop chan struct{}
	wg   sync.WaitGroup
}

// New makes a workload whose clients are made from cfg: its endpoints may be
// any members (the clients follow redirects to the leader; MaxRedirects 0
// means 4), with TLS if the members serve it.
func New(tb TB, cfg client.Config) *Workload {
	cfg.Endpoints = slices.Clone(cfg.Endpoints)
	if cfg.MaxRedirects == 0 {
		cfg.MaxRedirects = 4
	}
	return &Workload{tb: tb, cfg: cfg, t0: time.Now(), inserts: map[string]bool{}}
}

// Now is the workload's clock (ns since New), the time base of the history.
func (w *Workload) Now() int64 { return time.Since(w.t0).Nanoseconds() }

// Acked is the number of acknowledged transactions so far.
func (w *Workload) Acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

// FirstAckAfter returns how long after t the first write (transfer or
// insert) issued after t was acknowledged (the outage a client saw after a
// fault at t); false if none was yet.
func (w *Workload) FirstAckAfter(t time.Time) (time.Duration, bool) {
	since := t.Sub(w.t0).Nanoseconds()
	w.mu.Lock()
	defer w.mu.Unlock()
	first := int64(math.MaxInt64)
	for _, op := range w.history {
		in, out := op.Input.(kvInput), op.Output.(kvOutput)
		if in.op != "get" && !out.unknown && op.Call >= since && op.Return < first {
			first = op.Return
		}
	}
	if first == math.MaxInt64 {
		return 0, false
	}
	return time.Duration(first - since), true
}

// LongestWriteGap returns the longest time in [from, to] during which no
// write was acknowledged: from `from` to the first acknowledgement, between
// two acknowledgements, or from the last one to `to`. Unlike FirstAckAfter
// it also measures the outage of a fault that the old leader outlives for a
// while (a pod being deleted keeps serving through its shutdown grace).
func (w *Workload) LongestWriteGap(from, to time.Time) time.Duration {
	lo, hi := from.Sub(w.t0).Nanoseconds(), to.Sub(w.t0).Nanoseconds()
	w.mu.Lock()
	var acks []int64
	for _, op := range w.history {
		in, out := op.Input.(kvInput), op.Output.(kvOutput)
		if in.op != "get" && !out.unknown && op.Return >= lo && op.Return <= hi {
			acks = append(acks, op.Return)
		}
	}
	w.mu.Unlock()
	slices.Sort(acks)
	longest, last := int64(0), lo
	for _, a := range append(acks, hi) {
		longest, last = max(longest, a-last), a
	}
	return time.Duration(longest)
}

func (w *Workload) record(in kvInput, out kvOutput, call, ret int64) {
	if out.unknown {
		ret = math.MaxInt64 // it may take effect at any time after its call
	}
	w.mu.Lock()
	w.history = append(w.history, porcupine.Operation{Input: in, Output: out, Call: call, Return: ret})
	w.mu.Unlock()
}

func (w *Workload) fail(format string, args ...any) {
	w.mu.Lock()
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

// Definite reports whether a failed commit certainly had no effect.
func Definite(err error) bool {
	return errors.Is(err, client.ErrAborted) || errors.Is(err, client.ErrNotLeader) ||
		errors.Is(err, client.ErrTxnNotFound) || errors.Is(err, client.ErrInvalidArgument) ||
		errors.Is(err, client.ErrConditionFailed)
}

// NewClient is a client like the workload's own, closed when the test ends.
func (w *Workload) NewClient() *client.Client {
	w.tb.Helper()
	c, err := client.New(context.Background(), w.cfg)
	if err != nil {
		w.tb.Fatal(err)
	}
	w.tb.Cleanup(func() { c.Close() })
	return c
}

// Setup writes the accounts (retrying, bounded, until a leader takes them).
func (w *Workload) Setup(ctx context.Context) {
	c := w.NewClient()
	for i := 0; i < Accounts; i++ {
		var err error
		in := kvInput{key: Account(i), op: "put", new: strconv.Itoa(Initial)}
		for attempt := 0; attempt < 50; attempt++ {
			call := w.Now()
			err = c.Put(ctx, []byte(Account(i)), []byte(strconv.Itoa(Initial)))
			if err == nil {
				w.record(in, kvOutput{}, call, w.Now())
				break
			}
			if !Definite(err) && !errors.Is(err, client.ErrUnavailable) {
				w.record(in, kvOutput{unknown: true}, call, 0)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			w.tb.Fatalf("setup: put %s: %v", Account(i), err)
		}
	}
}

// Start runs transfer, reader and insert clients until Stop. A stopped
// workload may start again (the ledger goes on).
func (w *Workload) Start(transferers, readers, inserters int, seed uint64) {
	if w.stop == nil {
		w.stop = make(chan struct{})
	}
	for i := 0; i < transferers; i++ {
		w.run(func(c *client.Client, rng *rand.Rand) { w.transfer(c, rng) }, seed+uint64(i))
	}
	for i := 0; i < readers; i++ {
		w.run(func(c *client.Client, rng *rand.Rand) { w.readAll(c) }, seed+100+uint64(i))
	}
	for i := 0; i < inserters; i++ {
		id := w.inserters
		w.inserters++
		n := 0
		w.run(func(c *client.Client, rng *rand.Rand) {
			if w.Insert(c, fmt.Sprintf("ins/%d/%06d", id, n)) != nil {
				time.Sleep(20 * time.Millisecond)
			}
			n++
		}, seed+200+uint64(i))
	}
}

func (w *Workload) run(step func(*client.Client, *rand.Rand), seed uint64) {
	c := w.NewClient()
	rng := rand.New(rand.NewPCG(seed, seed*7+1))
	stop := w.stop
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			step(c, rng)
		}
	}()
}

// Stop stops the clients and waits for them.
func (w *Workload) Stop() {
	if w.stop == nil {
		return
	}
	close(w.stop)
	w.wg.Wait()
	w.stop = nil
}

func (w *Workload) transfer(c *client.Client, rng *rand.Rand) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	a, b := rng.IntN(Accounts), rng.IntN(Accounts)
	if a == b {
		return
	}
	x := 1 + rng.IntN(50)
	call := w.Now()
	tx, err := c.Begin(ctx)
	if err != nil {
		time.Sleep(20 * time.Millisecond)
		return
	}
	va, okA, err1 := tx.Get(ctx, []byte(Account(a)))
	vb, okB, err2 := tx.Get(ctx, []byte(Account(b)))
	if err1 != nil || err2 != nil || !okA || !okB {
		tx.Rollback(ctx)
		return
	}
	na, _ := strconv.Atoi(string(va))
	nb, _ := strconv.Atoi(string(vb))
	newA, newB := strconv.Itoa(na-x), strconv.Itoa(nb+x)
	if tx.Put(ctx, []byte(Account(a)), []byte(newA)) != nil || tx.Put(ctx, []byte(Account(b)), []byte(newB)) != nil {
		tx.Rollback(ctx)
		return
	}
	_, err = tx.Commit(ctx)
	ret := w.Now()
	if err != nil && Definite(err) {
		return
	}
	out := kvOutput{unknown: err != nil}
	w.record(kvInput{key: Account(a), op: "rmw", old: string(va), new: newA}, out, call, ret)
	w.record(kvInput{key: Account(b), op: "rmw", old: string(vb), new: newB}, out, call, ret)
	w.count(err == nil)
}

func (w *Workload) count(acked bool) {
	w.mu.Lock()
	if acked {
		w.acked++
	} else {
		w.unknown++
	}
	w.mu.Unlock()
}

func (w *Workload) readAll(c *client.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ops := make([]client.Op, Accounts)
	for i := range ops {
		ops[i] = client.Get([]byte(Account(i)))
	}
	call := w.Now()
	res, err := c.Execute(ctx, ops...)
	ret := w.Now()
	if err != nil {
		time.Sleep(10 * time.Millisecond)
		return
	}
	total := 0
	for i, r := range res.Results {
		v := ""
		if r.Found {
			v = string(r.Value)
		}
		n, _ := strconv.Atoi(v)
		total += n
		w.record(kvInput{key: Account(i), op: "get"}, kvOutput{value: v}, call, ret)
	}
	if total != Accounts*Initial {
		w.fail("a read of every account saw a total of %d, not %d", total, Accounts*Initial)
	}
	time.Sleep(5 * time.Millisecond)
}

// Insert puts a new key through c (put if absent) and records the outcome:
// nil when acknowledged. A key found present is a violation (keys are new).
func (w *Workload) Insert(c *client.Client, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	call := w.Now()
	_, err := c.Execute(ctx, client.PutIfAbsent([]byte(key), []byte("1")))
	ret := w.Now()
	if errors.Is(err, client.ErrConditionFailed) {
		w.fail("insert of the new key %s found it present", key)
		return err
	}
	if err != nil && Definite(err) {
		return err
	}
	w.record(kvInput{key: key, op: "insert", new: "1"}, kvOutput{unknown: err != nil}, call, ret)
	if err == nil {
		w.mu.Lock()
		w.inserts[key] = true
		w.mu.Unlock()
	}
	w.count(err == nil)
	return err
}
