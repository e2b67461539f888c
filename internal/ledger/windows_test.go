package ledger

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// recordingTB is a TB that keeps the failures Check reports, so that a test
// can assert that a broken state is reported.
type recordingTB struct {
	testing.TB
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Helper() {}

func (r *recordingTB) failedWith(s string) bool {
	for _, e := range r.errs {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// genOptions shapes randomHistory: values written are drawn from
// 0..values-1, and one write in unknownEvery has an unknown outcome.
// One operation in putEvery is a put (the others gets and read-modify-writes).
type genOptions struct{ values, unknownEvery, putEvery int }

var (
	// Few values and many unknown outcomes: the hard cases, in short
	// histories that porcupine decides.
	smallHistories = genOptions{values: 4, unknownEvery: 8, putEvery: 3}
	// The bank workload: balances rarely repeat, writes are transfers
	// (puts only set the accounts up), and outcomes are unknown around
	// faults only.
	workloadLike = genOptions{values: 1_000_000, unknownEvery: 100, putEvery: 500}
)

// randomHistory is a history of one register with concurrent clients: each
// client issues gets, puts and read-modify-writes (some of unknown outcome)
// against a real register; with lose it drops one acknowledged write.
func randomHistory(rng *rand.Rand, g genOptions, ops, clients int, lose bool) []porcupine.Operation {
	type pending struct {
		in   kvInput
		call int64
	}
	state := ""
	now := int64(0)
	var out []porcupine.Operation
	inflight := make([]*pending, clients)
	lost := false
	for n := 0; n < ops; {
		c := rng.IntN(clients)
		now += 1 + int64(rng.IntN(3))
		if inflight[c] == nil {
			in := kvInput{key: "k"}
			switch {
			case rng.IntN(g.putEvery) == 0:
				in.op, in.new = "put", strconv.Itoa(rng.IntN(g.values))
			case rng.IntN(2) == 0:
				in.op = "get"
			default:
				in.op, in.old, in.new = "rmw", state, strconv.Itoa(rng.IntN(g.values))
			}
			inflight[c] = &pending{in: in, call: now}
			continue
		}
		// The operation takes effect now, between its call and its return.
		p := inflight[c]
		inflight[c] = nil
		n++
		out1 := kvOutput{}
		unknown := p.in.op != "get" && rng.IntN(g.unknownEvery) == 0
		took := !unknown || rng.IntN(2) == 0
		switch p.in.op {
		case "get":
			out1.value = state
		case "put":
			if took {
				if lose && !lost && !unknown {
					lost = true // acknowledged, never applied
				} else {
					state = p.in.new
				}
			}
		case "rmw":
			if state != p.in.old {
				continue // the transaction aborted: not in the history
			}
			if took {
				state = p.in.new
			}
		}
		out1.unknown = unknown
		now += int64(rng.IntN(3))
		ret := now
		if unknown {
			ret = math.MaxInt64
		}
		out = append(out, porcupine.Operation{Input: p.in, Output: out1, Call: p.call, Return: ret})
	}
	out = append(out, porcupine.Operation{Input: kvInput{key: "k", op: "get"}, Output: kvOutput{value: state}, Call: now + 10, Return: now + 11})
	return out
}

// The windowed check gives porcupine's verdict on small histories (where
// porcupine finishes), histories with lost writes included.
func TestWindowedCheckAgreesWithPorcupine(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	illegal := 0
	for i := 0; i < 3000; i++ {
		h := randomHistory(rng, smallHistories, 4+rng.IntN(20), 1+rng.IntN(4), i%2 == 1)
		want := porcupine.CheckOperations(kvModel.ToModel(), h)
		got := checkKey(h, 0)
		if got.result == linUnknown || (got.result == linOK) != want {
			var b strings.Builder
			for _, op := range h {
				fmt.Fprintf(&b, "  [%d, %d] %s\n", op.Call, op.Return, kvModel.DescribeOperation(op.Input, op.Output))
			}
			t.Fatalf("history %d: windowed check %s, porcupine linearizable=%v:\n%s", i, got.result, want, b.String())
		}
		if !want {
			illegal++
		}
	}
	if illegal < 100 {
		t.Fatalf("only %d of 3000 histories were not linearizable: the generator does not test the refusals", illegal)
	}
}

// A long history of one key with many operations of unknown outcome
// spread through it (what a run with several failovers leaves) is decided
// in seconds; a lost acknowledged write in it is found.
func TestWindowedCheckDecidesLongHistoriesWithUnknownOutcomes(t *testing.T) {
	for _, lose := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(3, 5))
		h := randomHistory(rng, workloadLike, 20000, 4, lose)
		unknown := 0
		for _, op := range h {
			if op.Output.(kvOutput).unknown {
				unknown++
			}
		}
		start := time.Now()
		v := checkKey(h, 0)
		t.Logf("lose=%v: %d operations, %d of unknown outcome: %s in %v", lose, len(h), unknown, v.result, time.Since(start))
		want := map[bool]linResult{false: linOK, true: linIllegal}[lose]
		if v.result != want {
			t.Fatalf("lose=%v: %s, want %s (%s)", lose, v.result, want, v.why)
		}
	}
}

// A search over its budget is a failure of Check, not a pass.
func TestCheckFailsWhenLinearizabilityIsUndecided(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	tb := &recordingTB{TB: t}
	w := &Workload{tb: tb, history: randomHistory(rng, workloadLike, 2000, 4, false)}
	summary := w.checkLinearizableWithin(50)
	if !tb.failedWith("linearizability not decided") {
		t.Fatalf("an undecided check passed: %q, errors %q", summary, tb.errs)
	}
}

// Every member is compared with the leader, whatever the order of the
// snapshots: a follower listed before the leader that lacks a key fails.
func TestCheckComparesEveryFollowerWithTheLeaderInAnyOrder(t *testing.T) {
	state := func(extra ...string) map[string]string {
		s := map[string]string{}
		for i := 0; i < Accounts; i++ {
			s[Account(i)] = strconv.Itoa(Initial)
		}
		for _, k := range extra {
			s[k] = "1"
		}
		return s
	}
	for _, order := range []string{"follower first", "leader first"} {
		tb := &recordingTB{TB: t}
		w := &Workload{tb: tb, inserts: map[string]bool{}}
		for i := 0; i < Accounts; i++ {
			w.record(kvInput{key: Account(i), op: "put", new: strconv.Itoa(Initial)}, kvOutput{}, 0, 1)
		}
		leader := Snapshot{What: "leader", State: state("other/a", "other/b"), Leader: true, Call: 2, Return: 3}
		follower := Snapshot{What: "stale follower", State: state("other/a")}
		snaps := []Snapshot{follower, leader}
		if order == "leader first" {
			snaps = []Snapshot{leader, follower}
		}
		w.Check(snaps)
		if !tb.failedWith("stale follower: 11 keys, the leader has 12") {
			t.Errorf("%s: a follower lacking a key passed: %q", order, tb.errs)
		}
	}
}
