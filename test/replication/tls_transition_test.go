package replication_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rolisdb/rolis/internal/testca"
)

// Setting: a plaintext cluster of three moved to mutual TLS as the operator
// does it (docs/operations.md, "Turning TLS on or off for a running
// cluster"): the followers restart with TLS and --tls-accept-plaintext
// while the leader still speaks plaintext only (a mixed cluster), the
// leadership moves to one of them and the old leader restarts with the
// flag; then every member restarts with TLS only. Load: the bank and insert
// workload in plaintext through the transition (a plaintext client is
// served by every member until the last rollout).
// Invariants: the mixed cluster replicates (members with the flag call the
// plaintext-only leader in plaintext, and the leader's plaintext accepts are
// taken); once all have the flag, accepts go over mutual TLS; after the
// TLS-only rollout a plaintext client is refused, and no acknowledged write
// is lost (read back over TLS), the bank total is kept and histories are
// linearizable.
func TestTLSTransitionFromPlaintextUnderLoad(t *testing.T) {
	ca := testca.New(t, "cluster")
	member := ca.Member(t, "member")
	tlsFlags := []string{"--tls-cert=" + member.CertFile, "--tls-key=" + member.KeyFile, "--tls-ca=" + ca.CAFile}
	cl := startCluster(t, clusterOptions{members: 3})
	plainArgs := map[int][]string{}
	for id := 1; id <= 3; id++ {
		plainArgs[id] = cl.member(id).Args()
	}
	leader := elect(t, cl)
	w := newClusterWorkload(cl) // plaintext clients
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w.Setup(ctx)
	w.Start(2, 1, 2, 17)

	operator := ca.ClientConfig(t)
	cl.c.SetProbeTLS(operator) // members restarted below serve TLS (and plaintext)
	restart := func(id int, args []string) {
		t.Helper()
		if _, err := cl.member(id).Stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		cl.member(id).SetArgs(args)
		if err := cl.member(id).Restart(60 * time.Second); err != nil {
			t.Fatalf("member %d with %v: %v\n%s", id, args, err, cl.member(id).LogTail(30))
		}
		if err := cl.waitCaughtUp(cl.leader(), 60*time.Second); err != nil {
			t.Fatalf("after restarting member %d: %v", id, err)
		}
	}
	progress := func(what string) {
		t.Helper()
		acked := w.Acked()
		for i := 0; w.Acked() < acked+20; i++ {
			if i > 400 {
				t.Fatalf("%s: no write acknowledged for 10 s (%d)", what, w.Acked())
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	withFlag := func(id int) []string {
		return append(append(append([]string(nil), plainArgs[id]...), tlsFlags...), "--tls-accept-plaintext")
	}

	// 1. The followers take the flag; the leader is plaintext only.
	var followers []int
	for id := 1; id <= 3; id++ {
		if uint32(id) != leader {
			followers = append(followers, id)
			restart(id, withFlag(id))
		}
	}
	progress("mixed cluster")
	for _, id := range followers {
		if !strings.Contains(cl.member(id).Log(), "does not take TLS: calls to it go in plaintext") {
			t.Errorf("member %d does not say it calls the plaintext leader in plaintext:\n%s", id,
				cl.member(id).LogTail(30))
		}
	}

	// 2. A member with the flag leads; the old leader takes the flag.
	next, took := cl.failover(uint32(followers[0]))
	t.Logf("member %d leads after %v (mixed cluster)", next, took)
	progress("after the failover")
	restart(int(leader), withFlag(int(leader)))
	progress("every member with the flag")
	onTLS := func() bool {
		log := cl.member(int(next)).Log()
		return strings.Contains(log, "go on its accept stream") && strings.Contains(log, "(mutual TLS)")
	}
	for i := 0; !onTLS(); i++ {
		if i > 400 {
			t.Fatalf("with every member on the flag, the leader's accepts do not go over mutual TLS:\n%s",
				cl.member(int(next)).LogTail(30))
		}
		time.Sleep(25 * time.Millisecond)
	}
	w.Stop()
	t.Logf("transition: %d writes acknowledged", w.Acked())

	// 3. TLS only, leader last.
	tlsOnly := func(id int) []string { return append(append([]string(nil), plainArgs[id]...), tlsFlags...) }
	cl.tls = operator
	for id := 1; id <= 3; id++ {
		if uint32(id) != next {
			restart(id, tlsOnly(id))
		}
	}
	last, _ := cl.failover(uint32(leader))
	restart(int(next), tlsOnly(int(next)))
	for id := 1; id <= 3; id++ {
		if st, err := cl.status(id); err != nil {
			t.Fatalf("member %d over TLS: %v", id, err)
		} else if id == int(last) && st.GetRole().String() != "LEADER" {
			t.Fatalf("member %d: %v", id, st.GetRole())
		}
	}
	plain := newClient(t, cl.clientAddrs())
	pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer pcancel()
	if err := plain.Put(pctx, []byte("plaintext-after"), []byte("x")); err == nil {
		t.Fatal("a plaintext client was served after the TLS-only rollout")
	}
	t.Log(w.check(cl, last))
}
