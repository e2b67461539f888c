package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
)

// run executes rolisctl in process and returns stdout, stderr and the exit code.
func run(args ...string) (string, string, int) {
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), exitCodeOf(err)
}

func TestExitCodesOfTheCommandLine(t *testing.T) {
	for _, args := range [][]string{
		{"frobnicate"},                     // unknown command
		{"get"},                            // missing argument
		{"get", "a", "b"},                  // one too many
		{"get", "--nonesuch", "a"},         // unknown flag
		{"scan", "--limit=many"},           // bad flag value
		{"status", "-o", "xml"},            // bad output format
		{"status", "--json", "-o", "yaml"}, // two formats
		{"membership", "remove", "zero"},   // not a member id
		{"txn", "--op", "frobnicate k"},    // not an operation
		{"bench", "--workload=tpcc-ish"},   // unknown workload
		{"membership", "add", "nonsense"},  // not ID=HOST:PORT
		{"membership", "-o", "xml"},        // persistent -o, checked first
		{"membership", "add", "-o", "xml", "4=h:1"},
	} {
		if _, errOut, code := run(args...); code != exitUsage {
			t.Errorf("rolisctl %s: exit %d (%s), want %d", strings.Join(args, " "), code, errOut, exitUsage)
		}
	}
}

func TestExitCodesOfServerErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{fmt.Errorf("put: %w", status.Error(codes.InvalidArgument, "key too long")), exitUsage},
		{status.Error(codes.NotFound, "no such table"), exitNotFound},
		{fmt.Errorf("commit: %w", status.Error(codes.Aborted, "conflict")), exitConflict},
		{status.Error(codes.FailedPrecondition, "not the leader"), exitConflict},
		{status.Error(codes.Unavailable, "connection refused"), exitUnavailable},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), exitUnavailable},
		{status.Error(codes.Internal, "boom"), exitGeneric},
		{fmt.Errorf("plain"), exitGeneric},
		{exitError{exitConflict, "condition failed"}, exitConflict},
	} {
		if got := exitCodeOf(c.err); got != c.want {
			t.Errorf("%v: exit %d, want %d", c.err, got, c.want)
		}
	}
}

// No server answers: status says so with exit 5 and still prints the rows.
func TestStatusWithNoMemberReachableIsUnavailable(t *testing.T) {
	out, errOut, code := run("--endpoint=127.0.0.1:1", "--timeout=2s", "status", "-o", "json")
	if code != exitUnavailable {
		t.Fatalf("exit %d (%s), want %d", code, errOut, exitUnavailable)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 || rows[0]["reachable"] != false {
		t.Fatalf("stdout %q: %v", out, err)
	}
}

func TestVersionFlag(t *testing.T) {
	out, _, code := run("--version")
	if code != 0 || !strings.Contains(out, version) {
		t.Fatalf("--version: %q exit %d", out, code)
	}
}

// -o json and --json print the same single line, -o yaml the same value.
func TestOutputFormatsPrintOneValue(t *testing.T) {
	rows := statusRows([]client.MemberStatus{{ID: 1, AdminAddress: "a:1", Status: &rolisv1.StatusResponse{
		Id: 1, Role: rolisv1.Role_LEADER, Epoch: 2, Watermark: &rolisv1.LogKey{Epoch: 2, Ts: 7 << 8}, Decider: "operator"}}})
	var js, legacy, y bytes.Buffer
	if err := (&output{format: "json"}).print(&js, rows, nil); err != nil {
		t.Fatal(err)
	}
	if err := (&output{format: "table", asJSON: true}).print(&legacy, rows, nil); err != nil {
		t.Fatal(err)
	}
	if err := (&output{format: "yaml"}).print(&y, rows, nil); err != nil {
		t.Fatal(err)
	}
	if js.String() != legacy.String() || strings.Count(js.String(), "\n") != 1 {
		t.Fatalf("-o json %q, --json %q", js.String(), legacy.String())
	}
	fromYAML, err := yaml.YAMLToJSON(y.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	json.Unmarshal(js.Bytes(), &a)
	json.Unmarshal(fromYAML, &b)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("yaml %s is not json %s", fromYAML, js.String())
	}
	if !strings.Contains(js.String(), `"decider":"operator"`) {
		t.Errorf("no decider in %s", js.String())
	}
}

// The lag is shown in seconds of the leader's clock, and only when the
// leader's watermark and the member's replayed key are of one epoch.
func TestStatusShowsTheLagInSeconds(t *testing.T) {
	sec := func(s float64) uint64 { return uint64(s*1e9) << 8 }
	rows := statusRows([]client.MemberStatus{
		{ID: 1, AdminAddress: "a:1", Status: &rolisv1.StatusResponse{Id: 1, Role: rolisv1.Role_LEADER, Epoch: 3,
			Watermark: &rolisv1.LogKey{Epoch: 3, Ts: sec(10)}, Replayed: &rolisv1.LogKey{Epoch: 3, Ts: sec(10)}, Decider: "operator"}},
		{ID: 2, AdminAddress: "a:2", Status: &rolisv1.StatusResponse{Id: 2, Role: rolisv1.Role_FOLLOWER, Epoch: 3,
			Watermark: &rolisv1.LogKey{Epoch: 3, Ts: sec(9.9)}, Replayed: &rolisv1.LogKey{Epoch: 3, Ts: sec(9.75)}, Decider: "operator"}},
		{ID: 3, AdminAddress: "a:3", Status: &rolisv1.StatusResponse{Id: 3, Role: rolisv1.Role_CATCHING_UP, Epoch: 3,
			Watermark: &rolisv1.LogKey{Epoch: 2, Ts: sec(50)}, Replayed: &rolisv1.LogKey{Epoch: 2, Ts: sec(50)}, Decider: "operator"}},
	})
	if rows[0].LagSeconds == nil || *rows[0].LagSeconds != 0 {
		t.Errorf("leader lag %v", rows[0].LagSeconds)
	}
	if rows[1].LagSeconds == nil || *rows[1].LagSeconds < 0.2499 || *rows[1].LagSeconds > 0.2501 {
		t.Errorf("follower lag %v, want 0.25", rows[1].LagSeconds)
	}
	if rows[2].LagSeconds != nil {
		t.Errorf("a member replaying another epoch has lag %v, want unknown", *rows[2].LagSeconds)
	}
	var b bytes.Buffer
	printStatusTable(&b, rows)
	table := b.String()
	for _, want := range []string{"DECIDER", "0.250s", "operator"} {
		if !strings.Contains(table, want) {
			t.Errorf("no %q in\n%s", want, table)
		}
	}
	if strings.Contains(table, fmt.Sprint(sec(10)-sec(9.75))) {
		t.Errorf("the table shows the raw ts difference:\n%s", table)
	}
}
