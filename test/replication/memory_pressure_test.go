package replication_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rolisdb/rolis/pkg/client"
	"google.golang.org/grpc/codes"
)

// A follower under memory pressure still accepts and replays its leader's
// log: it cannot refuse what the leader committed (docs/operations.md,
// "Memory limit"). Member 3 starts above its watermark (--memory-limit
// below its resident memory); with member 2 down the leader's writes need
// member 3's accepts. Once member 3 leads, it refuses writes that add data
// and serves reads.
func TestAFollowerUnderMemoryPressureKeepsReplicatingAndRefusesWritesOnceItLeads(t *testing.T) {
	cl := startCluster(t, clusterOptions{memberArgs: func(id int) []string {
		if id == 3 {
			return []string{"--memory-limit=8MiB"}
		}
		return nil
	}})
	if got := metricValue(t, cl, 3, "rolis_memory_limit_bytes"); got != 8<<20 {
		t.Fatalf("member 3: rolis_memory_limit_bytes = %v", got)
	}
	if got := metricValue(t, cl, 3, "rolis_memory_resident_bytes"); got < 0.9*(8<<20) {
		t.Fatalf("member 3: rolis_memory_resident_bytes = %v, not above its watermark", got)
	}
	leader, _ := cl.failover(1)
	if leader != 1 {
		t.Fatalf("member %d leads, want 1", leader)
	}
	// Member 3 in the new epoch before member 2 goes: the leader then needs its accepts.
	if err := cl.waitCaughtUp(1, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.member(2).Kill(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, cl.clientAddrs())
	for i := 0; i < 200; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.Put(ctx, []byte(fmt.Sprintf("k%03d", i)), []byte("v"))
		cancel()
		if err != nil {
			t.Fatalf("put %d with members 1 and 3 (under pressure) up: %v", i, err)
		}
	}
	if err := cl.waitCaughtUp(1, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := metricValue(t, cl, 3, `rolis_aborts_total{reason="memory"}`); n != 0 {
		t.Fatalf("member 3 refused %v writes as a follower", n)
	}

	if next, _ := cl.failover(3, 1, 3); next != 3 {
		t.Fatalf("member %d leads, want 3", next)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var err error
	for {
		// Until the client finds member 3 leading, it may see the old leader's redirects.
		if err = c.Put(ctx, []byte("more"), []byte("v")); client.Code(err) == codes.ResourceExhausted ||
			ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if client.Code(err) != codes.ResourceExhausted {
		t.Fatalf("put on member 3 leading under memory pressure: %v, want RESOURCE_EXHAUSTED", err)
	}
	v, found, err := c.Get(ctx, []byte("k199"))
	if err != nil || !found || string(v) != "v" {
		t.Fatalf("read on member 3 under memory pressure: %q %v %v", v, found, err)
	}
	if n := metricValue(t, cl, 3, `rolis_aborts_total{reason="memory"}`); n < 1 {
		t.Fatalf("member 3 counted %v refusals", n)
	}
}
