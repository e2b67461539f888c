package replication_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// One decider per cluster (docs/replication.md, "One decider per cluster").
// Each test below drives both deciders against one cluster of three real
// members: the operator's path (PrepareFailover, a compare-and-set of the
// record outside the members, OpenEpoch, AnnounceLeader; played here by
// operatorDriver) and the control stream's (rolisctl failover:
// PrepareFailover, DecideEpoch, OpenEpoch). The members know which one
// their cluster uses (rolisd --decider) and refuse the other, and ballots
// are unique per proposer, so one epoch never gets two records nor two
// leaders.

// operatorDriver plays the operator: its record store is a compare-and-set
// on the last decided epoch, as the ConfigMap's resourceVersion
// precondition is.
type operatorDriver struct {
	a  *client.Admin
	mu sync.Mutex
	// The newest record the driver decided.
	record *rolisv1.EpochRecord
}

// compareAndSet stores rec if the stored record is still of epoch previous.
func (o *operatorDriver) compareAndSet(previous uint64, rec *rolisv1.EpochRecord) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.record.GetEpoch() != previous {
		return false
	}
	o.record = proto.Clone(rec).(*rolisv1.EpochRecord)
	return true
}

func (o *operatorDriver) last() *rolisv1.EpochRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.record == nil {
		return &rolisv1.EpochRecord{}
	}
	return proto.Clone(o.record).(*rolisv1.EpochRecord)
}

// prepareAndDecide runs the operator's steps up to its compare-and-set.
func (o *operatorDriver) prepareAndDecide(ctx context.Context, addr string, epoch uint64) (*rolisv1.EpochRecord, error) {
	last := o.last()
	prep, err := o.a.PrepareFailover(ctx, addr, epoch, last)
	if err != nil {
		return nil, err
	}
	rec := prep.GetProposed()
	if !o.compareAndSet(last.GetEpoch(), rec) {
		return nil, context.Canceled
	}
	return rec, nil
}

// open runs OpenEpoch and AnnounceLeader of a record the driver decided.
func (o *operatorDriver) open(ctx context.Context, cl *cluster, addr string, rec *rolisv1.EpochRecord) error {
	if _, err := o.a.OpenEpoch(ctx, addr, rec); err != nil {
		return err
	}
	for _, m := range cl.c.Members {
		_ = o.a.AnnounceLeader(ctx, m.AdminAddr, rec, "")
	}
	return nil
}

// waitVoting waits (bounded) until no member of a new cluster is still
// probing the others (CATCHING_UP), so that each can be a candidate.
func waitVoting(t *testing.T, cl *cluster) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		probing := 0
		for _, m := range cl.c.Members {
			if st, err := cl.status(m.ID); err != nil || st.GetRole() == rolisv1.Role_CATCHING_UP {
				probing++
			}
		}
		if probing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d members still catching up after 10s", probing)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// highestEpoch is the newest epoch any member led, promised or decided.
func highestEpoch(t *testing.T, cl *cluster) uint64 {
	t.Helper()
	top := uint64(0)
	for _, m := range cl.c.Members {
		st, err := cl.status(m.ID)
		if err != nil {
			t.Fatal(err)
		}
		top = max(top, st.GetEpoch(), st.GetPromisedEpoch(), st.GetDecided().GetEpoch())
	}
	return top
}

// expectRefused fails unless err is a gRPC error of code want whose message
// has every one of subs.
func expectRefused(t *testing.T, what string, err error, want codes.Code, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded; want %v", what, want)
	}
	if client.Code(err) != want {
		t.Fatalf("%s: %v; want %v", what, err, want)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%s: %q does not say %q", what, err, s)
		}
	}
	t.Logf("%s refused: %v", what, err)
}

// expectOneLeader checks that exactly member want leads epoch, and that
// every member's decided record is rec.
func expectOneLeader(t *testing.T, cl *cluster, want uint32, rec *rolisv1.EpochRecord) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var wrong []string
		for _, m := range cl.c.Members {
			st, err := cl.status(m.ID)
			switch {
			case err != nil:
				wrong = append(wrong, err.Error())
			case (st.GetRole() == rolisv1.Role_LEADER) != (st.GetId() == want):
				wrong = append(wrong, "member "+client.RoleName(st.GetRole())+" "+st.String())
			case !proto.Equal(st.GetDecided(), rec):
				wrong = append(wrong, "decided "+st.GetDecided().String())
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want member %d alone leading record %v: %s", want, rec, strings.Join(wrong, "; "))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Under --decider=operator. The operator's compare-and-set decides epoch e
// with member 1 as candidate; in the window before its OpenEpoch, a manual
// failover to member 2 runs the control stream's steps for the same epoch:
// its PrepareFailover is refused (ABORTED: every member promised e to
// member 1, and ballots are unique per proposer), and DecideEpoch is
// refused by every member (FAILED_PRECONDITION: the operator decides).
// Then both drivers run at once, the manual one as rolisctl does it
// (client.Failover, which reads the members' decider and refuses before it
// prepares anything); the operator's leader is the only leader, with the
// operator's record on every member.
func TestOneDeciderUnderTheOperatorRefusesTheControlStream(t *testing.T) {
	cl := startCluster(t, clusterOptions{args: []string{"--decider=operator"}})
	waitVoting(t, cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := cl.admin()
	op := &operatorDriver{a: a}
	m1, m2 := cl.member(1).AdminAddr, cl.member(2).AdminAddr
	for _, m := range cl.c.Members {
		st, err := cl.status(m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if st.GetDecider() != "operator" {
			t.Fatalf("member %d: Status decider %q, want operator", m.ID, st.GetDecider())
		}
	}

	// The operator prepares epoch e on member 1 and decides it.
	e := highestEpoch(t, cl) + 1
	recA, err := op.prepareAndDecide(ctx, m1, e)
	if err != nil {
		t.Fatalf("operator: %v", err)
	}
	// Before its OpenEpoch: the control stream's steps for the same epoch.
	_, err = a.PrepareFailover(ctx, m2, e, &rolisv1.EpochRecord{})
	expectRefused(t, "PrepareFailover of the same epoch by another candidate", err, codes.Aborted, "promised to member 1")
	recB := proto.Clone(recA).(*rolisv1.EpochRecord)
	recB.LeaderId = 2
	for _, m := range cl.c.Members {
		for _, rec := range []*rolisv1.EpochRecord{recA, recB} {
			_, err := a.DecideEpoch(ctx, m.AdminAddr, rec, 0)
			expectRefused(t, fmt.Sprintf("DecideEpoch on member %d", m.ID), err, codes.FailedPrecondition, "operator decides")
		}
	}
	if err := op.open(ctx, cl, m1, recA); err != nil {
		t.Fatalf("operator: OpenEpoch: %v", err)
	}
	expectOneLeader(t, cl, 1, recA)

	// Both at once: the operator fails over to member 3 while rolisctl
	// fails over to member 2.
	var wg sync.WaitGroup
	var opErr, manualErr error
	var recC *rolisv1.EpochRecord
	next := highestEpoch(t, cl) + 1
	start := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		<-start
		recC, opErr = op.prepareAndDecide(ctx, cl.member(3).AdminAddr, next)
		if opErr == nil {
			opErr = op.open(ctx, cl, cl.member(3).AdminAddr, recC)
		}
	}()
	go func() {
		defer wg.Done()
		<-start
		_, manualErr = a.Failover(ctx, client.FailoverOptions{To: 2})
	}()
	close(start)
	wg.Wait()
	if manualErr == nil || !strings.Contains(manualErr.Error(), "operator decides") {
		t.Fatalf("rolisctl failover against an operator-decided cluster: %v; want a refusal", manualErr)
	}
	t.Logf("rolisctl failover refused: %v", manualErr)
	if opErr != nil {
		t.Fatalf("operator failover to member 3: %v", opErr)
	}
	expectOneLeader(t, cl, 3, recC)
	w := newClient(t, cl.clientAddrs())
	if err := w.Put(ctx, []byte("after"), []byte("1")); err != nil {
		t.Fatalf("write to the operator's leader: %v", err)
	}
}

// Under --decider=control-stream (the default). The operator's path for
// epoch e (PrepareFailover on member 1, then OpenEpoch and AnnounceLeader
// of a record the control stream never decided) is refused
// (FAILED_PRECONDITION) while rolisctl's failover to member 2 runs at the
// same time and opens; member 2 alone leads, with the control stream's
// record on every member.
func TestOneDeciderUnderTheControlStreamRefusesTheOperatorsRecord(t *testing.T) {
	cl := startCluster(t, clusterOptions{})
	waitVoting(t, cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := cl.admin()
	op := &operatorDriver{a: a}
	m1 := cl.member(1).AdminAddr
	if st, err := cl.status(1); err != nil || st.GetDecider() != "control-stream" {
		t.Fatalf("member 1: Status decider %q (%v), want control-stream", st.GetDecider(), err)
	}

	// The operator prepares and "decides" epoch e outside the members ...
	e := highestEpoch(t, cl) + 1
	recA, err := op.prepareAndDecide(ctx, m1, e)
	if err != nil {
		t.Fatalf("operator: %v", err)
	}
	// ... and, before its OpenEpoch, rolisctl fails over to member 2 (a
	// newer epoch: it reads the members' promises) while the operator opens.
	var wg sync.WaitGroup
	var openErr, announceErr error
	var res *client.FailoverResult
	var manualErr error
	start := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		<-start
		_, openErr = a.OpenEpoch(ctx, m1, recA)
		announceErr = a.AnnounceLeader(ctx, cl.member(3).AdminAddr, recA, "")
	}()
	go func() {
		defer wg.Done()
		<-start
		res, manualErr = a.Failover(ctx, client.FailoverOptions{To: 2})
	}()
	close(start)
	wg.Wait()
	// OpenEpoch may also lose to the newer epoch's promise (ABORTED) when
	// rolisctl's Prepare came first; either way the record does not open.
	if openErr == nil {
		t.Fatal("OpenEpoch of a record the control stream did not decide succeeded")
	}
	if c := client.Code(openErr); c != codes.FailedPrecondition && c != codes.Aborted {
		t.Fatalf("OpenEpoch of the operator's record: %v; want FAILED_PRECONDITION or ABORTED", openErr)
	}
	t.Logf("operator's OpenEpoch refused: %v", openErr)
	if announceErr == nil {
		t.Fatal("AnnounceLeader of a record the control stream did not decide succeeded")
	}
	t.Logf("operator's AnnounceLeader refused: %v", announceErr)
	if manualErr != nil {
		t.Fatalf("rolisctl failover to member 2: %v", manualErr)
	}
	expectOneLeader(t, cl, 2, res.Record)

	// The same refusal without a race: a fresh Prepare on member 1, then
	// OpenEpoch of its record without DecideEpoch.
	last := res.Record
	prep, err := a.PrepareFailover(ctx, m1, highestEpoch(t, cl)+1, last)
	if err != nil {
		t.Fatalf("PrepareFailover on member 1: %v", err)
	}
	_, err = a.OpenEpoch(ctx, m1, prep.GetProposed())
	expectRefused(t, "OpenEpoch of an undecided record", err, codes.FailedPrecondition, "not decided on the control stream")
	err = a.AnnounceLeader(ctx, cl.member(3).AdminAddr, prep.GetProposed(), "")
	expectRefused(t, "AnnounceLeader of an undecided record", err, codes.FailedPrecondition, "not decided on the control stream")
	if st, err := cl.status(3); err != nil || !proto.Equal(st.GetDecided(), last) {
		t.Fatalf("member 3 learned %v (%v); want the control stream's record %v", st.GetDecided(), err, last)
	}
}
