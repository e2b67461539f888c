package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/rolisdb/rolis/pkg/client"
)

// Snapshot is the state of one member, read after the workload stopped.
type Snapshot struct {
	What  string // names the member in failures
	State map[string]string
	// Leader: the state was read by a linearizable scan on the leader, so
	// its values close every key's history. Call and Return bound the read
	// (Workload.Now).
	Leader       bool
	Call, Return int64
}

// Check verifies the invariants on the members' states (the leader and
// caught-up followers), reporting violations through the test: every
// acknowledged insert is present, the bank total is unchanged, every member
// other than the leader has as many keys as the leader (whatever the order
// of snaps), and every single-key history is proven linearizable (a check
// that cannot decide fails). It returns a summary line.
func (w *Workload) Check(snaps []Snapshot) string {
	t := w.tb
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.errs {
		t.Errorf("while running: %s", e)
	}
	// The leader's state first, whatever the order of snaps: every other
	// member is compared with it.
	var leaderState map[string]string
	leaders := 0
	for _, s := range snaps {
		if s.Leader {
			leaders++
			leaderState = s.State
			w.closeHistories(s)
		}
	}
	if leaders > 1 {
		t.Errorf("%d snapshots say they are the leader's", leaders)
	}
	for _, s := range snaps {
		if total := BankTotal(s.State); total != Accounts*Initial {
			t.Errorf("%s: bank total %d, want %d", s.What, total, Accounts*Initial)
		}
		var missing []string
		for k := range w.inserts {
			if _, ok := s.State[k]; !ok {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			// One report with the range: a test framework may stop at the
			// first error, and which keys are missing tells a stale
			// snapshot (every later key) from a gap in replay (a window).
			sort.Strings(missing)
			t.Errorf("%s: %d of %d acknowledged inserts missing: %s", s.What, len(missing), len(w.inserts),
				sampleKeys(missing, 10))
		}
		if !s.Leader && leaderState != nil && len(s.State) != len(leaderState) {
			t.Errorf("%s: %d keys, the leader has %d", s.What, len(s.State), len(leaderState))
		}
	}
	res := w.checkLinearizable()
	return fmt.Sprintf("%d acknowledged, %d unknown, %d inserts, %d operations checked (%s)", w.acked, w.unknown,
		len(w.inserts), len(w.history), res)
}

// BankTotal is the sum of the accounts in a member's state (Accounts *
// Initial whenever the state is consistent).
func BankTotal(state map[string]string) int {
	total := 0
	for i := 0; i < Accounts; i++ {
		n, _ := strconv.Atoi(state[Account(i)])
		total += n
	}
	return total
}

// closeHistories adds the leader's linearizable read of every workload key.
func (w *Workload) closeHistories(s Snapshot) {
	for k, v := range s.State {
		if !strings.HasPrefix(k, "acct/") && !strings.HasPrefix(k, "ins/") {
			continue // not written by the workload
		}
		w.history = append(w.history, porcupine.Operation{Input: kvInput{key: k, op: "get"},
			Output: kvOutput{value: v}, Call: s.Call, Return: s.Return})
	}
	for i := 0; i < Accounts; i++ {
		if _, ok := s.State[Account(i)]; !ok {
			w.history = append(w.history, porcupine.Operation{Input: kvInput{key: Account(i), op: "get"},
				Output: kvOutput{}, Call: s.Call, Return: s.Return})
		}
	}
}

// checkLinearizable checks every key's history on its own, cut into
// windows (windows.go), and fails the test unless every key is proven
// linearizable: a search that exceeds its budget is a failure, not a pass.
func (w *Workload) checkLinearizable() string {
	return w.checkLinearizableWithin(0)
}

func (w *Workload) checkLinearizableWithin(budget int) string {
	t := w.tb
	verdicts := checkKeys(w.history, budget)
	counts := map[linResult]int{}
	for _, v := range verdicts {
		counts[v.result]++
		switch v.result {
		case linUnknown:
			t.Errorf("key %s: linearizability not decided (%d operations): %s", v.key, v.ops, v.why)
		case linIllegal:
			t.Errorf("key %s: %d operations, not linearizable: no order of the window below fits any state the key could be in before it (%s)",
				v.key, v.ops, sampleKeys(quoteAll(v.before), 10))
			ops := slices.Clone(v.window)
			sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
			for i, op := range ops {
				if i > 60 {
					break
				}
				t.Logf("  [%.3fms, %.3fms] %s", float64(op.Call)/1e6, float64(op.Return)/1e6,
					kvModel.DescribeOperation(op.Input, op.Output))
			}
			w.visualize(v.key)
		}
	}
	if counts[linIllegal]+counts[linUnknown] == 0 {
		return fmt.Sprintf("%d keys linearizable", len(verdicts))
	}
	return fmt.Sprintf("%d keys linearizable, %d not, %d undecided", counts[linOK], counts[linIllegal], counts[linUnknown])
}

// visualize writes porcupine's view of one key's history (bounded in time:
// it is only an aid to reading a failure).
func (w *Workload) visualize(key string) {
	var ops []porcupine.Operation
	for _, op := range w.history {
		if op.Input.(kvInput).key == key {
			ops = append(ops, op)
		}
	}
	_, info := porcupine.CheckOperationsVerbose(kvModel.ToModel(), ops, 10*time.Second)
	if dir, err := os.MkdirTemp("", "rolis-history-"); err == nil {
		p := dir + "/history.html"
		if err := porcupine.VisualizePath(kvModel.ToModel(), info, p); err == nil {
			w.tb.Logf("visualization of the history of %s: %s", key, p)
		}
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// Dump reads every key of the member at cfg.Endpoints[0] (TLS as cfg says;
// it never follows a redirect): on the leader by a linearizable scan, on a
// follower by a read-only transaction (its replayed snapshot).
func Dump(ctx context.Context, cfg client.Config, leader bool) (map[string]string, error) {
	cfg.Endpoints = cfg.Endpoints[:min(1, len(cfg.Endpoints))]
	cfg.MaxRedirects = -1
	c, err := client.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	out := map[string]string{}
	start := []byte{}
	for page := 0; page < 1000; page++ {
		var kvs []client.KV
		var more bool
		if leader {
			kvs, err = c.Scan(ctx, start, nil, 5000)
			more = len(kvs) == 5000
		} else {
			var tx *client.Tx
			tx, err = c.Begin(ctx, client.ReadOnly())
			if err == nil {
				kvs, more, err = tx.Scan(ctx, start, nil, 5000)
				tx.Rollback(ctx)
			}
		}
		if errors.Is(err, client.ErrResourceExhausted) && page < 100 {
			// Workers held by transactions that clients abandoned: they expire.
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			out[string(kv.Key)] = string(kv.Value)
		}
		if !more || len(kvs) == 0 {
			return out, nil
		}
		start = append(slices.Clone(kvs[len(kvs)-1].Key), 0)
	}
	return nil, errors.New("dump: too many pages")
}

// WriteHistory writes every operation the workload recorded, one a line, in
// the order of their calls: what was acknowledged (and read), and what the
// client could not know about ("outcome unknown").
func (w *Workload) WriteHistory(out io.Writer) error {
	w.mu.Lock()
	ops := slices.Clone(w.history)
	w.mu.Unlock()
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	for _, op := range ops {
		ret := "-"
		if op.Return != math.MaxInt64 {
			ret = fmt.Sprintf("%.3f", float64(op.Return)/1e6)
		}
		if _, err := fmt.Fprintf(out, "%.3f %s %s\n", float64(op.Call)/1e6, ret, kvModel.DescribeOperation(op.Input, op.Output)); err != nil {
			return err
		}
	}
	return nil
}

// sampleKeys lists up to n keys of sorted, the first and last ones when
// there are more.
func sampleKeys(sorted []string, n int) string {
	if len(sorted) <= n {
		return strings.Join(sorted, " ")
	}
	return strings.Join(sorted[:n/2], " ") + " ... " + strings.Join(sorted[len(sorted)-n/2:], " ")
}
