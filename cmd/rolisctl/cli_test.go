package main

import (
	"encoding/json"
	"errors"
	"testing"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
)

func TestParseOpsLanguage(t *testing.T) {
	ops, err := parseOps([]string{
		"# comment", "", "get a", `put "b c" "x\ty"`, "delete d", "put-if e new old",
		"put-if-absent f v", "scan a z 10", `scan a ""`,
	}, "t1")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind       client.OpKind
		key, value string
	}{
		{client.OpGet, "a", ""}, {client.OpPut, "b c", "x\ty"}, {client.OpDelete, "d", ""},
		{client.OpPutIf, "e", "new"}, {client.OpPutIf, "f", "v"}, {client.OpScan, "a", ""}, {client.OpScan, "a", ""},
	}
	if len(ops) != len(want) {
		t.Fatalf("got %d ops", len(ops))
	}
	for i, w := range want {
		o := ops[i]
		if o.Kind != w.kind || string(o.Key) != w.key || string(o.Value) != w.value || o.Table != "t1" {
			t.Errorf("op %d = %+v, want %+v", i, o, w)
		}
	}
	if string(ops[3].Expected) != "old" || !ops[4].ExpectAbsent || ops[5].Limit != 10 || string(ops[5].EndKey) != "z" || ops[6].EndKey != nil {
		t.Errorf("details wrong: %+v", ops)
	}
}

func TestParseOpsRejectsBadLines(t *testing.T) {
	for _, line := range []string{"get", "put k", "frobnicate k", `put "k v`, "scan a b notanumber", "get a b"} {
		if _, err := parseOps([]string{line}, ""); err == nil {
			t.Errorf("%q accepted", line)
		}
	}
}

func TestKeysSortNumerically(t *testing.T) {
	a, b := string(appendKey(nil, 9)), string(appendKey(nil, 10))
	if a != "user0000000009" || b != "user0000000010" || a >= b {
		t.Fatalf("%s %s", a, b)
	}
	if v := valueOf(8, 1, 2); len(v) != 8 {
		t.Fatalf("value %q", v)
	}
}

func TestStatusJSONHasTheStableFields(t *testing.T) {
	members := []client.MemberStatus{
		{ID: 1, AdminAddress: "a:1", Status: &rolisv1.StatusResponse{Id: 1, Role: rolisv1.Role_LEADER, Epoch: 3,
			Watermark: &rolisv1.LogKey{Epoch: 3, Ts: 100}, Replayed: &rolisv1.LogKey{Epoch: 3, Ts: 90}}},
		{ID: 2, AdminAddress: "a:2", Status: &rolisv1.StatusResponse{Id: 2, Role: rolisv1.Role_FOLLOWER, Epoch: 3,
			Watermark: &rolisv1.LogKey{Epoch: 3, Ts: 95}, Replayed: &rolisv1.LogKey{Epoch: 3, Ts: 60}}},
		{ID: 3, ReplicationAddress: "r:3", Err: errTest},
	}
	b, _ := json.Marshal(statusRows(members))
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%s", b)
	}
	for _, m := range got {
		for _, k := range []string{"id", "role", "epoch", "watermark"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("member without %q: %s", k, b)
			}
		}
	}
	if got[0]["role"] != "leader" || got[0]["watermark"] != 100.0 || got[0]["lag"] != 0.0 {
		t.Errorf("leader row %v", got[0])
	}
	if got[1]["role"] != "follower" || got[1]["lag"] != 40.0 {
		t.Errorf("follower row %v", got[1])
	}
	if got[2]["role"] != "unknown" || got[2]["reachable"] != false || got[2]["lag"] != nil {
		t.Errorf("unreachable row %v", got[2])
	}
}

var errTest = errors.ErrUnsupported
