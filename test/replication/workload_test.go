package replication_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/rolisdb/rolis/pkg/client"
)

const (
	accounts = 10
	initial  = 1000
)

func acct(i int) string { return fmt.Sprintf("acct/%02d", i) }

// One single-key operation of the history.
type kvInput struct {
	key  string
	op   string // get, put, rmw (read old, wrote new), insert (put if absent)
	old  string
	new  string
	when string // a description for failures
}
type kvOutput struct {
	value   string // get: the value read ("" = absent)
	unknown bool   // the client could not know whether it took effect
}

// kvModel: one register per key; an operation whose outcome is unknown may
// or may not have taken effect.
var kvModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(kvInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{""} },
	Step: func(state, input, output interface{}) []interface{} {
		s := state.(string)
		in := input.(kvInput)
		out := output.(kvOutput)
		switch in.op {
		case "get":
			if out.value == s {
				return []interface{}{s}
			}
			return nil
		case "put":
			if out.unknown {
				return []interface{}{in.new, s}
			}
			return []interface{}{in.new}
		case "rmw":
			if s != in.old {
				if out.unknown {
					return []interface{}{s}
				}
				return nil
			}
			if out.unknown {
				return []interface{}{in.new, s}
			}
			return []interface{}{in.new}
		case "insert":
			if s != "" {
				if out.unknown {
					return []interface{}{s}
				}
				return nil
			}
			if out.unknown {
				return []interface{}{in.new, s}
			}
			return []interface{}{in.new}
		}
		return nil
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(kvInput), output.(kvOutput)
		u := ""
		if out.unknown {
			u = " (outcome unknown)"
		}
		switch in.op {
		case "get":
			return fmt.Sprintf("get(%s) -> %q", in.key, out.value)
		case "rmw":
			return fmt.Sprintf("rmw(%s, %q -> %q)%s", in.key, in.old, in.new, u)
		}
		return fmt.Sprintf("%s(%s, %q)%s", in.op, in.key, in.new, u)
	},
}

// workload runs bank transfers, all-account reads and unique inserts through
// pkg/client and keeps the ledger of what was acknowledged.
type workload struct {
	t     testing.TB
	addrs []string
	t0    time.Time

	mu      sync.Mutex
	history []porcupine.Operation
	inserts map[string]bool // acknowledged inserts
	errs    []string        // invariant violations seen while running
	acked   int
	unknown int

	stop chan struct{}
	wg   sync.WaitGroup
}

func newWorkload(t testing.TB, addrs []string) *workload {
	return &workload{t: t, addrs: addrs, t0: time.Now(), inserts: map[string]bool{}, stop: make(chan struct{})}
}

func (w *workload) now() int64 { return time.Since(w.t0).Nanoseconds() }

func (w *workload) record(in kvInput, out kvOutput, call, ret int64) {
	if out.unknown {
		ret = math.MaxInt64 // it may take effect at any time after its call
	}
	w.mu.Lock()
	w.history = append(w.history, porcupine.Operation{Input: in, Output: out, Call: call, Return: ret})
	w.mu.Unlock()
}

func (w *workload) fail(format string, args ...any) {
	w.mu.Lock()
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

// definite reports whether a failed commit certainly had no effect.
func definite(err error) bool {
	return errors.Is(err, client.ErrAborted) || errors.Is(err, client.ErrNotLeader) ||
		errors.Is(err, client.ErrTxnNotFound) || errors.Is(err, client.ErrInvalidArgument) ||
		errors.Is(err, client.ErrConditionFailed)
}

// setup writes the accounts (and waits until it succeeds, bounded).
func (w *workload) setup(ctx context.Context) {
	c := newClient(w.t, w.addrs)
	for i := 0; i < accounts; i++ {
		var err error
		for attempt := 0; attempt < 50; attempt++ {
			call := w.now()
			err = c.Put(ctx, []byte(acct(i)), []byte(strconv.Itoa(initial)))
			if err == nil {
				w.record(kvInput{key: acct(i), op: "put", new: strconv.Itoa(initial)}, kvOutput{}, call, w.now())
				break
			}
			if !definite(err) && !errors.Is(err, client.ErrUnavailable) {
				w.record(kvInput{key: acct(i), op: "put", new: strconv.Itoa(initial)}, kvOutput{unknown: true}, call, 0)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			w.t.Fatalf("setup: put %s: %v", acct(i), err)
		}
	}
}

// start runs transfer, reader and insert clients until stopWorkload.
func (w *workload) start(transferers, readers, inserters int, seed uint64) {
	for i := 0; i < transferers; i++ {
		w.run(func(c *client.Client, rng *rand.Rand) { w.transfer(c, rng) }, seed+uint64(i))
	}
	for i := 0; i < readers; i++ {
		w.run(func(c *client.Client, rng *rand.Rand) { w.readAll(c) }, seed+100+uint64(i))
	}
	for i := 0; i < inserters; i++ {
		id := i
		n := 0
		w.run(func(c *client.Client, rng *rand.Rand) {
			w.insert(c, fmt.Sprintf("ins/%d/%06d", id, n))
			n++
		}, seed+200+uint64(i))
	}
}

func (w *workload) run(step func(*client.Client, *rand.Rand), seed uint64) {
	c := newClient(w.t, w.addrs)
	rng := rand.New(rand.NewPCG(seed, seed*7+1))
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			step(c, rng)
		}
	}()
}

func (w *workload) stopWorkload() {
	close(w.stop)
	w.wg.Wait()
}

func (w *workload) transfer(c *client.Client, rng *rand.Rand) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	a, b := rng.IntN(accounts), rng.IntN(accounts)
	if a == b {
		return
	}
	x := 1 + rng.IntN(50)
	call := w.now()
	tx, err := c.Begin(ctx)
	if err != nil {
		time.Sleep(20 * time.Millisecond)
		return
	}
	va, okA, err1 := tx.Get(ctx, []byte(acct(a)))
	vb, okB, err2 := tx.Get(ctx, []byte(acct(b)))
	if err1 != nil || err2 != nil || !okA || !okB {
		tx.Rollback(ctx)
		return
	}
	na, _ := strconv.Atoi(string(va))
	nb, _ := strconv.Atoi(string(vb))
	newA, newB := strconv.Itoa(na-x), strconv.Itoa(nb+x)
	if tx.Put(ctx, []byte(acct(a)), []byte(newA)) != nil || tx.Put(ctx, []byte(acct(b)), []byte(newB)) != nil {
		tx.Rollback(ctx)
		return
	}
	_, err = tx.Commit(ctx)
	ret := w.now()
	if err != nil && definite(err) {
		return
	}
	out := kvOutput{unknown: err != nil}
	w.record(kvInput{key: acct(a), op: "rmw", old: string(va), new: newA}, out, call, ret)
	w.record(kvInput{key: acct(b), op: "rmw", old: string(vb), new: newB}, out, call, ret)
	w.mu.Lock()
	if err == nil {
		w.acked++
	} else {
		w.unknown++
	}
	w.mu.Unlock()
}

func (w *workload) readAll(c *client.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ops := make([]client.Op, accounts)
	for i := range ops {
		ops[i] = client.Get([]byte(acct(i)))
	}
	call := w.now()
	res, err := c.Execute(ctx, ops...)
	ret := w.now()
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
		w.record(kvInput{key: acct(i), op: "get"}, kvOutput{value: v}, call, ret)
	}
	if total != accounts*initial {
		w.fail("a read of every account saw a total of %d, not %d", total, accounts*initial)
	}
	time.Sleep(5 * time.Millisecond)
}

func (w *workload) insert(c *client.Client, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	call := w.now()
	_, err := c.Execute(ctx, client.PutIfAbsent([]byte(key), []byte("1")))
	ret := w.now()
	if errors.Is(err, client.ErrConditionFailed) {
		w.fail("insert of the new key %s found it present", key)
		return
	}
	if err != nil && definite(err) {
		return
	}
	w.record(kvInput{key: key, op: "insert", new: "1"}, kvOutput{unknown: err != nil}, call, ret)
	w.mu.Lock()
	if err == nil {
		w.inserts[key] = true
		w.acked++
	} else {
		w.unknown++
	}
	w.mu.Unlock()
	if err != nil {
		time.Sleep(20 * time.Millisecond)
	}
}

// check verifies the invariants on the leader and every running follower
// (which must catch up first). It returns a summary line.
func (w *workload) check(cl *cluster, leader uint32) string {
	t := w.t
	t.Helper()
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatalf("invariant check: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.errs {
		t.Errorf("while running: %s", e)
	}
	var leaderState map[string]string
	for _, m := range cl.c.Members {
		if !m.Running() {
			continue
		}
		isLeader := uint32(m.ID) == leader
		call := w.now()
		state, err := dump(ctx, m.ClientAddr, isLeader)
		if err != nil {
			t.Fatalf("reading member %d: %v", m.ID, err)
		}
		what := fmt.Sprintf("member %d (follower)", m.ID)
		if isLeader {
			what = fmt.Sprintf("member %d (leader)", m.ID)
			leaderState = state
			// The leader's scan is linearizable: its values close every history.
			for k, v := range state {
				if !strings.HasPrefix(k, "acct/") && !strings.HasPrefix(k, "ins/") {
					continue // not written by the workload
				}
				w.history = append(w.history, porcupine.Operation{Input: kvInput{key: k, op: "get"},
					Output: kvOutput{value: v}, Call: call, Return: w.now()})
			}
			for i := 0; i < accounts; i++ {
				if _, ok := state[acct(i)]; !ok {
					w.history = append(w.history, porcupine.Operation{Input: kvInput{key: acct(i), op: "get"},
						Output: kvOutput{}, Call: call, Return: w.now()})
				}
			}
		}
		total := 0
		for i := 0; i < accounts; i++ {
			n, _ := strconv.Atoi(state[acct(i)])
			total += n
		}
		if total != accounts*initial {
			t.Errorf("%s: bank total %d, want %d", what, total, accounts*initial)
		}
		missing := 0
		for k := range w.inserts {
			if _, ok := state[k]; !ok {
				if missing < 5 {
					t.Errorf("%s: acknowledged insert %s is missing", what, k)
				}
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("%s: %d acknowledged inserts missing", what, missing)
		}
		if !isLeader && leaderState != nil && len(state) != len(leaderState) {
			t.Errorf("%s: %d keys, the leader has %d", what, len(state), len(leaderState))
		}
	}
	res, info := porcupine.CheckOperationsVerbose(kvModel.ToModel(), w.history, 60*time.Second)
	switch res {
	case porcupine.Illegal:
		t.Errorf("single-key histories are not linearizable (%d operations)", len(w.history))
		for _, part := range kvModel.Partition(w.history) {
			if porcupine.CheckOperations(kvModel.ToModel(), part) {
				continue
			}
			ops := slices.Clone(part)
			sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
			t.Errorf("key %s: %d operations, not linearizable:", ops[0].Input.(kvInput).key, len(ops))
			for i, op := range ops {
				if i > 60 {
					break
				}
				ret := "inf"
				if op.Return != math.MaxInt64 {
					ret = fmt.Sprintf("%.3fms", float64(op.Return)/1e6)
				}
				t.Logf("  [%.3fms, %s] %s", float64(op.Call)/1e6, ret, kvModel.DescribeOperation(op.Input, op.Output))
			}
			break
		}
		if dir, err := os.MkdirTemp("", "rolis-history-"); err == nil {
			p := dir + "/history.html"
			if err := porcupine.VisualizePath(kvModel.ToModel(), info, p); err == nil {
				t.Logf("visualization of the history: %s", p)
			}
		}
	case porcupine.Unknown:
		t.Logf("linearizability check timed out (%d operations)", len(w.history))
	}
	return fmt.Sprintf("%d acknowledged, %d unknown, %d inserts, %d operations checked (%s)", w.acked, w.unknown,
		len(w.inserts), len(w.history), res)
}
