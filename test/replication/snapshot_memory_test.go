package replication_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// What serving a snapshot and writing a checkpoint cost a member in memory
// (docs/replication.md, "Members that lose their memory", "Durability"):
// the writes go to the peer and to the file as the scan (or the read of a
// checkpoint) produces them. Checked: a snapshot served by a follower (its
// store's scan) and by the leader (its checkpoint file) grows the member's
// peak resident memory (VmHWM, reset through /proc/<pid>/clear_refs) by
// less than half its data set; a member that copied its store before
// sending or writing it (about the data set again plus ~72 bytes a record)
// fails. A whole state transfer (the receiver restarted empty) grows the
// serving follower by less than a quarter of the data set: its peeks ask
// for no slot or only the slots after the snapshot (docs/replication.md,
// "Peeks that carry only the slots the reader needs"); answering them with
// the whole retained log grew it by 97-144 MB, 0.27-1.06 of its store,
// and fails. Measured and logged besides: the receiver's peak and a
// follower's checkpoint; docs/benchmarks.md ("Snapshot memory") has the
// figures.
//
// Sizes: ROLIS_SNAPSHOT_MEMORY_MB (data loaded, default 64) and
// ROLIS_SNAPSHOT_MEMORY_VALUE (value bytes, default 1024).
func TestSnapshotTransferAndCheckpointDoNotCopyTheStore(t *testing.T) {
	dataMB := envInt(t, "ROLIS_SNAPSHOT_MEMORY_MB", 64)
	valueBytes := envInt(t, "ROLIS_SNAPSHOT_MEMORY_VALUE", 1024)
	const checkpointEvery = 16 << 20
	data := t.TempDir()
	cl := startCluster(t, clusterOptions{memberArgs: func(id int) []string {
		return []string{"--data-dir=" + memberDir(data, id), "--durability=disk",
			fmt.Sprintf("--checkpoint-every=%d", checkpointEvery)}
	}})
	// Member 3 leads: member 2, restarted empty and not knowing the leader
	// yet, asks member 1 (a follower) first.
	const leader, server, receiver = 3, 1, 2
	if l, took := cl.failover(leader); l != leader {
		t.Fatalf("member %d leads, want %d", l, leader)
	} else {
		t.Logf("member %d leads (%v)", l, took)
	}
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	base := procStatus(t, cl, server)["VmRSS"]

	records := dataMB << 20 / valueBytes
	c := newClient(t, cl.clientAddrs())
	start := time.Now()
	loadRecords(t, c, 0, records, valueBytes, 1)
	t.Logf("loaded %d records of %d bytes in %v", records, valueBytes, time.Since(start).Round(time.Millisecond))
	if err := cl.waitCaughtUp(leader, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	quietCheckpoints(t, cl, server)
	loaded := procStatus(t, cl, server)
	store := loaded["VmRSS"] - base
	loadPeak := loaded["VmHWM"] // its checkpoints during the load included
	dataSet := int64(records) * int64(valueBytes+12)

	// A snapshot alone, as a member catching up asks for it: from the
	// follower (its store's scan) and from the leader (its checkpoint file).
	served := map[int]int64{}
	for _, id := range []int{server, leader} {
		before := resetPeak(t, cl, id)
		// The leader's checkpoint may predate the last writes (the log
		// after it holds them); the follower's scan has every record.
		if n := drainSnapshot(t, cl.member(id).ReplAddr, receiver); n > records || (id == server && n != records) || n == 0 {
			t.Fatalf("member %d's snapshot holds %d writes, want %d", id, n, records)
		}
		served[id] = procStatus(t, cl, id)["VmHWM"] - before
	}
	if !strings.Contains(cl.member(leader).Log(), "served a state transfer from its checkpoint") {
		t.Fatalf("the leader did not serve its checkpoint:\n%s", cl.member(leader).LogTail(20))
	}

	// The transfer: the receiver restarts with an empty data directory.
	killEmpty(t, cl, data, receiver)
	servedBefore := leaderServed(cl, leader)
	before := resetPeak(t, cl, server)
	if err := cl.member(receiver).Restart(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cl.waitCaughtUp(leader, 120*time.Second); err != nil {
		t.Fatalf("member %d restarted empty: %v", receiver, err)
	}
	if !strings.Contains(cl.member(receiver).Log(), "state transfer done") {
		t.Fatalf("member %d did not catch up by a state transfer:\n%s", receiver, cl.member(receiver).LogTail(30))
	}
	if leaderServed(cl, leader) != servedBefore {
		t.Fatalf("the leader served the snapshot, not follower %d", server)
	}
	transferGrowth := procStatus(t, cl, server)["VmHWM"] - before
	receiverPeak := procStatus(t, cl, receiver)["VmHWM"]

	// A checkpoint: overwrites push the server's log past --checkpoint-every.
	written := strings.Count(cl.member(server).Log(), "checkpoint written:")
	before = resetPeak(t, cl, server)
	loadRecords(t, c, 0, (checkpointEvery+checkpointEvery/4)/valueBytes, valueBytes, 2)
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(cl.member(server).Log(), "checkpoint written:") == written {
		if time.Now().After(deadline) {
			t.Fatalf("member %d wrote no checkpoint:\n%s", server, cl.member(server).LogTail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	quietCheckpoints(t, cl, server)
	checkpointGrowth := procStatus(t, cl, server)["VmHWM"] - before

	mb := func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
	ratio := func(b int64) string { return fmt.Sprintf("%.2f", float64(b)/float64(store)) }
	t.Logf("data set %s (%d records of %d bytes); the store's resident size on member %d: %s",
		mb(dataSet), records, valueBytes, server, mb(store))
	t.Logf("| follower loading the data (a checkpoint every %d MiB of log), peak resident | %s | %s |",
		checkpointEvery>>20, mb(loadPeak), ratio(loadPeak))
	t.Logf("| follower serving a snapshot, peak growth | %s | %s |", mb(served[server]), ratio(served[server]))
	t.Logf("| leader serving its checkpoint, peak growth | %s | %s |", mb(served[leader]), ratio(served[leader]))
	t.Logf("| follower serving a whole state transfer (peeks included), peak growth | %s | %s |",
		mb(transferGrowth), ratio(transferGrowth))
	t.Logf("| receiver, peak resident | %s | %s |", mb(receiverPeak), ratio(receiverPeak))
	t.Logf("| follower writing a checkpoint, peak growth | %s | %s |", mb(checkpointGrowth), ratio(checkpointGrowth))
	if transferGrowth > dataSet/4 {
		t.Errorf("serving a whole state transfer grew member %d's peak resident memory by %s, more than a quarter of "+
			"its data set (%s): do its peeks carry the whole log?", server, mb(transferGrowth), mb(dataSet))
	}
	for _, id := range []int{server, leader} {
		if served[id] > dataSet/2 {
			t.Errorf("serving a snapshot grew member %d's peak resident memory by %s, more than half its data set (%s)",
				id, mb(served[id]), mb(dataSet))
		}
	}
}

// Fault: a member catching up reads one chunk of a follower's snapshot and
// goes away (its call cancelled). Invariants: the follower's scan ends (it
// does not wait on the stream with its snapshot worker held), so the next
// snapshot it serves is whole, and it keeps replaying.
func TestASnapshotReaderThatGoesAwayEndsTheFollowersScan(t *testing.T) {
	cl := startCluster(t, clusterOptions{})
	const leader, server = 3, 1
	if l, _ := cl.failover(leader); l != leader {
		t.Fatalf("member %d leads, want %d", l, leader)
	}
	c := newClient(t, cl.clientAddrs())
	const records = 8192 // 8 MB: several chunks
	loadRecords(t, c, 0, records, 1024, 1)
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(cl.member(server).ReplAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := rolisv1.NewReplicationClient(conn).Snapshot(ctx, &rolisv1.SnapshotRequest{MemberId: 2})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil || !first.GetOk() || first.GetLast() {
		t.Fatalf("first chunk: ok=%v last=%v err=%v", first.GetOk(), first.GetLast(), err)
	}
	cancel()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := readSnapshot(cl.member(server).ReplAddr, 2)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if n := r.n; n != records {
			t.Fatalf("the next snapshot holds %d writes, want %d", n, records)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("member %d serves no snapshot after a reader went away:\n%s", server, cl.member(server).LogTail(20))
	}
	loadRecords(t, c, records, 128, 1024, 2)
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// drainSnapshot asks the member at addr for a snapshot as member `from`
// would, reads it to the end and returns how many writes it held.
func drainSnapshot(t *testing.T, addr string, from int) int {
	t.Helper()
	n, err := readSnapshot(addr, from)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func readSnapshot(addr string, from int) (int, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream, err := rolisv1.NewReplicationClient(conn).Snapshot(ctx, &rolisv1.SnapshotRequest{MemberId: uint32(from)})
	if err != nil {
		return 0, err
	}
	writes, chunks, last := 0, 0, false
	for {
		c, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("snapshot from %s, after %d chunks: %w", addr, chunks, err)
		}
		if chunks == 0 && !c.GetOk() {
			return 0, fmt.Errorf("snapshot from %s refused: %s", addr, c.GetError())
		}
		chunks++
		writes += len(c.GetWrites())
		last = c.GetLast()
	}
	if !last {
		return 0, fmt.Errorf("snapshot from %s ended without its last chunk", addr)
	}
	return writes, nil
}

// leaderServed counts the snapshots the leader says it served.
func leaderServed(cl *cluster, leader int) int {
	log := cl.member(leader).Log()
	return strings.Count(log, "served a snapshot of") + strings.Count(log, "served a state transfer from its checkpoint")
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// loadRecords puts records [from, from+n) with values of valueBytes (their
// content drawn from seed), 128 to a transaction, four transactions at once.
func loadRecords(t *testing.T, c *client.Client, from, n, valueBytes int, seed uint64) {
	t.Helper()
	const perTxn, writers = 128, 4
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for {
				first := int(next.Add(perTxn)) - perTxn
				if first >= from+n {
					return
				}
				ops := make([]client.Op, 0, perTxn)
				for i := first; i < first+perTxn && i < from+n; i++ {
					v := make([]byte, valueBytes)
					for j := range v {
						v[j] = byte('a' + r.IntN(26))
					}
					ops = append(ops, client.Put([]byte(fmt.Sprintf("rec%09d", i)), v))
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := c.Execute(ctx, ops...)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("records %d..: %w", first, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// quietCheckpoints waits until member id has written no checkpoint for 3 s.
func quietCheckpoints(t *testing.T, cl *cluster, id int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last, since := -1, time.Now()
	for time.Now().Before(deadline) {
		if n := strings.Count(cl.member(id).Log(), "checkpoint written:"); n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) >= 3*time.Second {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("member %d kept writing checkpoints", id)
}

// resetPeak resets member id's peak resident size (VmHWM) to its resident
// size, and returns that.
func resetPeak(t *testing.T, cl *cluster, id int) int64 {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/clear_refs", cl.member(id).Pid())
	if err := os.WriteFile(path, []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak resident size (%v): this test needs Linux's clear_refs", err)
	}
	return procStatus(t, cl, id)["VmRSS"]
}

// procStatus is member id's /proc/<pid>/status sizes (VmRSS, VmHWM, ...), in bytes.
func procStatus(t *testing.T, cl *cluster, id int) map[string]int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", cl.member(id).Pid()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(rest)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if n, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
			out[name] = n << 10
		}
	}
	return out
}
