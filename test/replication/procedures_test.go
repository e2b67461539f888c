package replication_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/rolisdb/rolis/pkg/client"
)

// Named procedures (docs/client.md, "Procedures") on three members: every
// member creates the workloads' tables with the same ids, so their writes
// replicate; the sizes a setup stored travel with the data, so after the
// leader is killed the new leader runs the procedures without a new setup,
// and the bank total and TPC-C consistency conditions 1-4 still hold there.
func TestProceduresRunOnTheNewLeaderAfterFailover(t *testing.T) {
	cl := startCluster(t, clusterOptions{members: 3})
	leader := elect(t, cl)
	c := newClient(t, cl.clientAddrs())
	call := func(proc string, args ...uint64) []int64 {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := c.Call(ctx, proc, args...)
		if err != nil {
			t.Fatalf("%s%v: %v", proc, args, err)
		}
		return r.Output
	}
	load := func(w string, sizes ...uint64) {
		t.Helper()
		parts := call(w+".setup", sizes...)
		for p := range uint64(parts[0]) {
			call(w+".load", p)
		}
	}
	load("bank", 300, 100)
	load("tpcc", 1, 1000, 2, 30, 9)
	for i := range uint64(200) {
		call("bank.transfer", i%300, (i*7+1)%300, 1+i%10)
		call("tpcc.new_order", 1, i)
		call("tpcc.payment", 1, i)
		if i%10 == 0 {
			call("tpcc.delivery", 1, i)
		}
	}
	if got := call("bank.audit"); got[0] != 300*100 {
		t.Fatalf("bank.audit on the first leader = %v", got)
	}

	if _, err := cl.member(int(leader)).Kill(); err != nil {
		t.Fatal(err)
	}
	next, took := cl.failover(0, runningIDs(cl, leader)...)
	t.Logf("member %d killed; member %d leads after %v", leader, next, took)
	c = newClient(t, cl.clientAddrs())
	// The first call may meet the failover's end: retry it a while.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r, err := c.Call(ctx, "bank.audit")
		cancel()
		if err == nil {
			if r.Output[0] != 300*100 {
				t.Fatalf("bank.audit on the new leader = %v, want [%d]", r.Output, 300*100)
			}
			break
		}
		if time.Now().After(deadline) || client.Code(err) == codes.InvalidArgument {
			t.Fatalf("bank.audit on the new leader: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	call("tpcc.check")
	for i := range uint64(50) {
		call("bank.transfer", i%300, (i*3+2)%300, 5)
		call("tpcc.new_order", 1, 1000+i)
	}
	if got := call("bank.audit"); got[0] != 300*100 {
		t.Fatalf("bank.audit after more transfers = %v", got)
	}
	call("tpcc.check")
}
