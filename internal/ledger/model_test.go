package ledger

import (
	"math"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func op(in kvInput, out kvOutput, call, ret int64) porcupine.Operation {
	if out.unknown {
		ret = math.MaxInt64
	}
	return porcupine.Operation{Input: in, Output: out, Call: call, Return: ret}
}

// The model accepts what a correct store can do and refuses a lost
// acknowledged write; an unknown outcome may go either way.
func TestModelRefusesALostAcknowledgedInsertAndAllowsUnknownOutcomes(t *testing.T) {
	ins := kvInput{key: "ins/1", op: "insert", new: "1"}
	get := kvInput{key: "ins/1", op: "get"}
	cases := []struct {
		name    string
		history []porcupine.Operation
		want    bool
	}{
		{"acknowledged then read", []porcupine.Operation{op(ins, kvOutput{}, 0, 1), op(get, kvOutput{value: "1"}, 2, 3)}, true},
		{"acknowledged then lost", []porcupine.Operation{op(ins, kvOutput{}, 0, 1), op(get, kvOutput{}, 2, 3)}, false},
		{"unknown, absent", []porcupine.Operation{op(ins, kvOutput{unknown: true}, 0, 0), op(get, kvOutput{}, 2, 3)}, true},
		{"unknown, present", []porcupine.Operation{op(ins, kvOutput{unknown: true}, 0, 0), op(get, kvOutput{value: "1"}, 2, 3)}, true},
		{"transfer from a value never written", []porcupine.Operation{
			op(kvInput{key: "acct/00", op: "put", new: "1000"}, kvOutput{}, 0, 1),
			op(kvInput{key: "acct/00", op: "rmw", old: "900", new: "950"}, kvOutput{}, 2, 3)}, false},
	}
	for _, c := range cases {
		if got := porcupine.CheckOperations(kvModel.ToModel(), c.history); got != c.want {
			t.Errorf("%s: linearizable = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFirstAckAfterCountsOnlyWritesIssuedAfterTheFault(t *testing.T) {
	w := &Workload{t0: time.Now().Add(-time.Second)}
	fault := w.t0.Add(500 * time.Millisecond)
	ms := func(d int64) int64 { return d * int64(time.Millisecond) }
	w.record(kvInput{key: "a", op: "insert"}, kvOutput{}, ms(400), ms(700))        // issued before the fault
	w.record(kvInput{key: "b", op: "get"}, kvOutput{}, ms(600), ms(650))           // a read
	w.record(kvInput{key: "c", op: "insert"}, kvOutput{unknown: true}, ms(600), 0) // not acknowledged
	w.record(kvInput{key: "d", op: "rmw"}, kvOutput{}, ms(800), ms(900))           // the first
	w.record(kvInput{key: "e", op: "insert"}, kvOutput{}, ms(850), ms(950))
	gap, ok := w.FirstAckAfter(fault)
	if !ok || gap != 400*time.Millisecond {
		t.Fatalf("FirstAckAfter = %v, %v; want 400ms, true", gap, ok)
	}
	if _, ok := w.FirstAckAfter(w.t0.Add(time.Second)); ok {
		t.Fatal("no write was issued after 1s")
	}
}
