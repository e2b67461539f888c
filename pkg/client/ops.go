package client

import (
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// DefaultTable is the table used when an operation names none.
const DefaultTable = "kv"

// OpKind is the kind of one operation of a one-shot transaction.
type OpKind int32

const (
	OpGet    = OpKind(rolisv1.Op_GET)
	OpPut    = OpKind(rolisv1.Op_PUT)
	OpDelete = OpKind(rolisv1.Op_DELETE)
	// OpPutIf writes only if the current value equals Expected (or the key is
	// absent, with ExpectAbsent); otherwise the whole transaction writes
	// nothing and Execute returns ErrConditionFailed.
	OpPutIf = OpKind(rolisv1.Op_PUT_IF)
	OpScan  = OpKind(rolisv1.Op_SCAN)
)

func (k OpKind) String() string { return rolisv1.Op_Kind(k).String() }

// Op is one operation of a one-shot transaction. Build it with Get, Put,
// Delete, PutIf, PutIfAbsent or Scan, and In to choose a table.
type Op struct {
	Kind         OpKind
	Table        string // "" = DefaultTable
	Key          []byte // start key for OpScan
	Value        []byte
	Expected     []byte
	ExpectAbsent bool
	EndKey       []byte // OpScan: exclusive end; nil = unbounded
	Limit        uint32 // OpScan: 0 = server default
}

// Get reads key.
func Get(key []byte) Op { return Op{Kind: OpGet, Key: key} }

// Put writes key = value.
func Put(key, value []byte) Op { return Op{Kind: OpPut, Key: key, Value: value} }

// Delete removes key.
func Delete(key []byte) Op { return Op{Kind: OpDelete, Key: key} }

// PutIf writes key = value if its current value equals expected.
func PutIf(key, value, expected []byte) Op {
	return Op{Kind: OpPutIf, Key: key, Value: value, Expected: expected}
}

// PutIfAbsent writes key = value if key is absent.
func PutIfAbsent(key, value []byte) Op {
	return Op{Kind: OpPutIf, Key: key, Value: value, ExpectAbsent: true}
}

// Scan reads keys in [start, end) in order, at most limit of them (0 = the
// server's default); a nil end is unbounded.
func Scan(start, end []byte, limit uint32) Op {
	return Op{Kind: OpScan, Key: start, EndKey: end, Limit: limit}
}

// In returns op addressed to table.
func (o Op) In(table string) Op { o.Table = table; return o }

func (o *Op) proto() *rolisv1.Op {
	return &rolisv1.Op{Kind: rolisv1.Op_Kind(o.Kind), Table: o.Table, Key: o.Key, Value: o.Value,
		Expected: o.Expected, ExpectAbsent: o.ExpectAbsent, EndKey: o.EndKey, Limit: o.Limit}
}

// IsReadOnly reports whether ops contain no write.
func IsReadOnly(ops []Op) bool {
	for i := range ops {
		if k := ops[i].Kind; k != OpGet && k != OpScan {
			return false
		}
	}
	return true
}

// KV is one key and its value.
type KV struct {
	Key, Value []byte
}

// OpResult is the outcome of one operation, in the order of the ops.
type OpResult struct {
	Found bool   // GET, DELETE, PUT_IF: the key existed
	Value []byte // GET
	Items []KV   // SCAN
	More  bool   // SCAN: not reported per op by the server; always false
}

// Result is the outcome of a one-shot transaction.
type Result struct {
	Results         []OpResult
	ConditionFailed bool
	// Epoch and CommitTS form the replication key of the transaction.
	Epoch, CommitTS uint64
}

func resultFromProto(r *rolisv1.ExecuteResponse) *Result {
	res := &Result{ConditionFailed: r.GetConditionFailed(), Epoch: r.GetEpoch(), CommitTS: r.GetCommitTs()}
	res.Results = make([]OpResult, len(r.GetResults()))
	for i, or := range r.GetResults() {
		res.Results[i] = OpResult{Found: or.GetFound(), Value: or.GetValue(), Items: kvsFromProto(or.GetItems())}
	}
	return res
}

func kvsFromProto(items []*rolisv1.KeyValue) []KV {
	if len(items) == 0 {
		return nil
	}
	out := make([]KV, len(items))
	for i, it := range items {
		out[i] = KV{Key: it.GetKey(), Value: it.GetValue()}
	}
	return out
}
