package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rolisdb/rolis/internal/testserver"
)

// The interface outside checks use: put, get (value alone), bench --json,
// status --json, -o json|yaml, the exit codes (docs/client.md, "rolisctl").
func TestRolisctlPutGetPrintsTheValueAlone(t *testing.T) {
	c := testserver.Start(t, testserver.Options{})
	ep := "--endpoint=" + c.Member(1).ClientAddr
	if out, errOut, err := rolisctl(t, "", ep, "put", "greeting", "hello world"); err != nil {
		t.Fatalf("put: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err := rolisctl(t, "", ep, "get", "greeting")
	if err != nil || out != "hello world\n" {
		t.Fatalf("get: %q %v %s", out, err, errOut)
	}
	_, _, err = rolisctl(t, "", ep, "get", "absent")
	if exitCode(err) != 3 {
		t.Fatalf("get of an absent key: exit %d, want 3 (not found)", exitCode(err))
	}
	out, _, err = rolisctl(t, "", ep, "get", "greeting", "-o", "json")
	if err != nil || out != `{"key":"greeting","value":"hello world"}`+"\n" {
		t.Fatalf("get -o json: %q %v", out, err)
	}
	if _, _, err = rolisctl(t, "", ep, "get"); exitCode(err) != 2 {
		t.Fatalf("get without a key: exit %d, want 2 (usage)", exitCode(err))
	}
	out, _, err = rolisctl(t, "", ep, "delete", "greeting")
	if err != nil || strings.TrimSpace(out) != "deleted" {
		t.Fatalf("delete: %q %v", out, err)
	}
}

func TestRolisctlTxnFromStdinAndScan(t *testing.T) {
	c := testserver.Start(t, testserver.Options{})
	ep := "--endpoint=" + c.Member(1).ClientAddr
	script := "put a 1\nput b 2\n# comment\nput \"c d\" \"x y\"\nget a\n"
	out, errOut, err := rolisctl(t, script, ep, "txn")
	if err != nil || out != "a\t1\nOK\n" { // the transaction reads its own write
		t.Fatalf("txn: %q %v %s", out, err, errOut)
	}
	out, _, err = rolisctl(t, "", ep, "scan", "a", "z")
	if err != nil || out != "a\t1\nb\t2\nc d\tx y\n" {
		t.Fatalf("scan: %q %v", out, err)
	}
	out, _, err = rolisctl(t, "", ep, "scan", "--limit=1")
	if err != nil || out != "a\t1\n" {
		t.Fatalf("scan --limit=1: %q %v", out, err)
	}
	out, _, err = rolisctl(t, "", ep, "txn", "--op", "put-if a 9 wrong", "--op", "put e 5", "-o", "json")
	if exitCode(err) != 4 || out != `{"committed":false,"reads":[]}`+"\n" {
		t.Fatalf("failed put-if: exit %d, %q; want 4 (conflict)", exitCode(err), out)
	}
	out, _, err = rolisctl(t, "", ep, "scan", "a", "c", "-o", "yaml")
	if err != nil || out != "- key: a\n  value: \"1\"\n- key: b\n  value: \"2\"\n" {
		t.Fatalf("scan -o yaml: %q %v", out, err)
	}
	out, _, err = rolisctl(t, "", ep, "txn", "--interactive", "--op", "get b", "--op", "put-if a 9 1")
	if err != nil || out != "b\t2\nOK\n" {
		t.Fatalf("interactive txn: %q %v", out, err)
	}
	if out, _, _ := rolisctl(t, "", ep, "get", "a"); out != "9\n" {
		t.Fatalf("a = %q", out)
	}
}

func TestRolisctlStatusJSONLastLineListsTheMember(t *testing.T) {
	c := testserver.Start(t, testserver.Options{})
	out, errOut, err := rolisctl(t, "", "--endpoint="+c.Member(1).AdminAddr, "status", "--json")
	if err != nil {
		t.Fatalf("status: %v\n%s%s", err, out, errOut)
	}
	var members []map[string]any
	if err := json.Unmarshal([]byte(out), &members); err != nil {
		t.Fatalf("the output is not one JSON array: %v\n%s", err, out)
	}
	if len(members) != 1 {
		t.Fatalf("%d members: %s", len(members), out)
	}
	for _, k := range []string{"id", "role", "epoch", "watermark", "lag", "lag_seconds"} {
		if _, ok := members[0][k]; !ok {
			t.Errorf("no %q in %v", k, members[0])
		}
	}
	if members[0]["lag_seconds"] != 0.0 {
		t.Errorf("lag_seconds %v on one node, want 0", members[0]["lag_seconds"])
	}
	if members[0]["role"] != "standalone" {
		t.Errorf("role %v, want standalone", members[0]["role"])
	}
	out, _, err = rolisctl(t, "", "--endpoint="+c.Member(1).AdminAddr, "status")
	if err != nil || !strings.Contains(out, "standalone") || !strings.Contains(out, "0.000s") {
		t.Fatalf("status table (lag in seconds): %q %v", out, err)
	}
	out, _, err = rolisctl(t, "", "--endpoint="+c.Member(1).AdminAddr, "status", "-o", "yaml")
	if err != nil || !strings.Contains(out, "role: standalone\n") {
		t.Fatalf("status -o yaml: %q %v", out, err)
	}
}

func TestRolisctlBenchJSONLastLine(t *testing.T) {
	c := testserver.Start(t, testserver.Options{})
	for _, mode := range [][]string{{"--pipeline=16"}, {"--pipeline=0"}} {
		args := append([]string{"--endpoint=" + c.Member(1).ClientAddr, "bench", "--workload=ycsbpp",
			"--seconds=1", "--warmup=0.2", "--keys=2000", "--json"}, mode...)
		out, errOut, err := rolisctl(t, "", args...)
		if err != nil {
			t.Fatalf("bench %v: %v\n%s%s", mode, err, out, errOut)
		}
		// stdout is the report alone; the table and the progress go to stderr.
		var rep map[string]any
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
		}
		for _, k := range []string{"throughput_tps", "p50_us", "p95_us", "p99_us", "seconds", "commits", "aborts", "errors", "mode"} {
			if _, ok := rep[k]; !ok {
				t.Errorf("no %q in %v", k, rep)
			}
		}
		if rep["throughput_tps"].(float64) <= 0 || rep["errors"].(float64) != 0 {
			t.Errorf("bench %v: %v", mode, rep)
		}
		if !strings.Contains(errOut, "txn/s") || !strings.Contains(errOut, "throughput") {
			t.Errorf("no progress line or summary on stderr: %q", errOut)
		}
		t.Logf("bench %v: %s", mode, lastLine(out))
	}
}

func TestRolisctlLoadWritesTheKeys(t *testing.T) {
	c := testserver.Start(t, testserver.Options{})
	ep := "--endpoint=" + c.Member(1).ClientAddr
	if out, errOut, err := rolisctl(t, "", ep, "load", "--keys=1234"); err != nil {
		t.Fatalf("load: %v\n%s%s", err, out, errOut)
	}
	out, _, err := rolisctl(t, "", ep, "scan", "--keys-only", "--limit=5000")
	if err != nil || strings.Count(out, "\n") != 1234 || !strings.HasPrefix(out, "user0000000000\n") {
		t.Fatalf("scan after load: %d lines, %v", strings.Count(out, "\n"), err)
	}
}
