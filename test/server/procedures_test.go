package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/rolisdb/rolis/internal/testca"
	"github.com/rolisdb/rolis/pkg/client"
)

// Named server-side procedures (docs/client.md, "Procedures") against one
// real rolisd: every workload through `rolisctl bench --workload=...` for
// about a second, then its invariant checked on the server (bank total,
// TPC-A sums, TPC-C consistency 1-4); bad calls change nothing; a
// client-readonly certificate may call the read-only procedures only.

// benchJSON runs rolisctl bench with args and returns its JSON report.
func benchJSON(t *testing.T, ep string, args ...string) map[string]any {
	t.Helper()
	all := append([]string{"--endpoint=" + ep, "bench", "--seconds=1", "--warmup=0.2", "--json"}, args...)
	out, errOut, err := rolisctl(t, "", all...)
	if err != nil {
		t.Fatalf("bench %v: %v\n%s%s", args, err, out, errOut)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench %v: stdout is not one JSON object: %v\n%s", args, err, out)
	}
	if !strings.Contains(errOut, "txn/s") || !strings.Contains(errOut, "throughput") {
		t.Errorf("bench %v: no progress line or summary on stderr: %q", args, errOut)
	}
	if rep["throughput_tps"].(float64) <= 0 || rep["errors"].(float64) != 0 || rep["procedures"] != true {
		t.Errorf("bench %v: %v", args, rep)
	}
	t.Logf("bench %v: %s", args, lastLine(out))
	return rep
}

func call(t *testing.T, cl *client.Client, proc string, args ...uint64) []int64 {
	t.Helper()
	r, err := cl.Call(ctxFor(t, 2*time.Minute), proc, args...)
	if err != nil {
		t.Fatalf("%s%v: %v", proc, args, err)
	}
	return r.Output
}

func TestProcedureWorkloadsRunAndKeepTheirInvariants(t *testing.T) {
	m, cl := standalone(t)
	ep := m.ClientAddr

	// --load sets up and loads; --check runs the check after the run.
	for _, w := range [][]string{
		{"--workload=bank", "--keys=2000", "--mix=10/90"},
		{"--workload=tpca", "--keys=3", "--zipf=0.9"},
		{"--workload=ycsbpp", "--procedures", "--keys=5000", "--zipf=0.9"},
		{"--workload=retwis", "--keys=5000"},
		{"--workload=hash", "--keys=2000", "--mix=90/10", "--batch=0"},
	} {
		rep := benchJSON(t, ep, append(w, "--load", "--check")...)
		if w[0] == "--workload=bank" || w[0] == "--workload=tpca" {
			if c, _ := rep["check"].(string); !strings.HasSuffix(c, " ok") {
				t.Errorf("%s: check %q", w[0], c)
			}
		}
	}
	// The bank's total, asked of the server independently of bench.
	if got := call(t, cl, "bank.audit"); len(got) != 1 || got[0] != 2000*1000 {
		t.Errorf("bank.audit = %v, want [%d]", got, 2000*1000)
	}
	call(t, cl, "tpca.check")

	// TPC-C with a small population (set up here), driven by bench
	// without --load, unary and batched; then consistency conditions 1-4.
	parts := call(t, cl, "tpcc.setup", 2, 2000, 4, 60, 18)
	for p := range uint64(parts[0]) {
		call(t, cl, "tpcc.load", p)
	}
	benchJSON(t, ep, "--workload=tpcc", "--warehouses=2", "--concurrency=2", "--check")
	rep := benchJSON(t, ep, "--workload=tpcc", "--warehouses=2", "--pipeline=0", "--concurrency=2", "--check")
	if c, _ := rep["check"].(string); c != "tpcc.check ok" {
		t.Errorf("tpcc: check %q", c)
	}
	call(t, cl, "tpcc.check")
	// --load with other sizes than the ones loaded is refused whole: the
	// rows stay as they are.
	_, errOut, err := rolisctl(t, "", "--endpoint="+ep, "bench", "--seconds=1", "--json",
		"--workload=tpcc", "--warehouses=2", "--load")
	if err == nil || !strings.Contains(errOut, "already set up with other sizes") {
		t.Errorf("bench --load of TPC-C loaded with other sizes: %v\n%s", err, errOut)
	}
	call(t, cl, "tpcc.check")
}

// A second --load of the same workload keeps what is loaded and says so
// (kubectl rolis bench adds --load to every run of a procedure workload).
func TestProcedureWorkloadLoadedTwiceIsKept(t *testing.T) {
	m, _ := standalone(t)
	args := []string{"--endpoint=" + m.ClientAddr, "bench", "--seconds=1", "--warmup=0.2", "--json",
		"--workload=tpcc", "--load", "--check"}
	for run := 1; run <= 2; run++ {
		out, errOut, err := rolisctl(t, "", args...)
		if err != nil || !strings.Contains(out, "tpcc.check ok") {
			t.Fatalf("run %d: %v\n%s%s", run, err, out, errOut)
		}
		if kept := strings.Contains(errOut, "parts of tpcc were already loaded"); kept != (run == 2) {
			t.Errorf("run %d: the parts already loaded are reported %v:\n%s", run, kept, errOut)
		}
	}
}

func TestProcedureBadCallsAreInvalidArgumentAndChangeNothing(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, time.Minute)
	_, err := cl.Call(ctx, "bank.audit")
	wantCode(t, "bank.audit before setup", err, codes.FailedPrecondition)
	parts := call(t, cl, "bank.setup", 50, 100)
	for p := range uint64(parts[0]) {
		call(t, cl, "bank.load", p)
	}
	before := dump(t, cl, "bench.bank")
	for _, bad := range []struct {
		proc string
		args []uint64
	}{
		{"bank.steal", []uint64{1, 2, 3}},
		{"bank.transfer", []uint64{1, 1, 3}},
		{"bank.transfer", []uint64{1, 50, 3}},
		{"bank.transfer", []uint64{1, 2}},
		{"bank.transfer", []uint64{1, 2, 1 << 40}},
		{"bank.load", []uint64{7}},
		{"bank.setup", []uint64{1, 100}},
	} {
		_, err := cl.Call(ctx, bad.proc, bad.args...)
		wantCode(t, fmt.Sprintf("%s%v", bad.proc, bad.args), err, codes.InvalidArgument)
	}
	if after := dump(t, cl, "bench.bank"); after != before {
		t.Fatalf("bad calls changed the accounts")
	}
	if got := call(t, cl, "bank.audit"); got[0] != 50*100 {
		t.Fatalf("bank.audit = %v", got)
	}
}

func TestProcedureClientReadOnlyMayCallOnlyReadOnlyProcedures(t *testing.T) {
	ca := testca.New(t, "cluster")
	m := authzServer(t, ca)
	ctx := ctxFor(t, time.Minute)
	writer := callerOf(t, m, "client", ca.TLSConfig(ca.Client(t, "app", "client/app")))
	readonly := callerOf(t, m, "client-readonly", ca.TLSConfig(ca.Client(t, "reports", "client-readonly/reports")))
	_, err := writer.rolis.Execute(ctx, client.ProcedureRequest("bank.setup", 10, 5))
	wantCode(t, "client bank.setup", err, codes.OK)
	_, err = writer.rolis.Execute(ctx, client.ProcedureRequest("bank.load", 0))
	wantCode(t, "client bank.load", err, codes.OK)
	r, err := readonly.rolis.Execute(ctx, client.ProcedureRequest("bank.audit"))
	wantCode(t, "client-readonly bank.audit", err, codes.OK)
	if len(r.GetOutput()) != 1 || r.GetOutput()[0] != 50 {
		t.Errorf("bank.audit output %v, want [50]", r.GetOutput())
	}
	_, err = readonly.rolis.Execute(ctx, client.ProcedureRequest("bank.transfer", 1, 2, 3))
	wantCode(t, "client-readonly bank.transfer", err, codes.PermissionDenied)
	_, err = readonly.rolis.Execute(ctx, client.ProcedureRequest("bank.nothing"))
	wantCode(t, "client-readonly unknown procedure", err, codes.PermissionDenied)
	// On a stream: the refusal is per request.
	stream, err := readonly.rolis.ExecuteStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := client.ProcedureRequest("bank.transfer", 1, 2, 3)
	req.Seq = 9
	if err := stream.Send(req); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if codes.Code(resp.GetErrorCode()) != codes.PermissionDenied || resp.GetSeq() != 9 {
		t.Errorf("stream bank.transfer: %v", resp)
	}
	stream.CloseSend()
}
