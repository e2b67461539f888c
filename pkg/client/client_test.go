package client

// Unit tests of the client's routing, retry and pipelining logic against
// small in-process gRPC fakes. The server itself is tested for real in
// test/server.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

type fake struct {
	rolisv1.UnimplementedRolisServer
	addr        string
	redirectTo  string // answer writes with FAILED_PRECONDITION naming this leader
	inMessage   bool   // name the leader in the message only, not the trailer
	notLeader   bool   // FAILED_PRECONDITION without any address
	commitFails atomic.Int32
	calls       atomic.Int32
	nextTxn     atomic.Uint64
	condFail    bool
	hang        bool // answer nothing until the caller gives up (a paused member)
}

func (f *fake) redirect(ctx context.Context) error {
	if f.notLeader {
		return status.Error(codes.FailedPrecondition, "not the leader; leader unknown")
	}
	if f.redirectTo == "" {
		return nil
	}
	if f.inMessage {
		return status.Errorf(codes.FailedPrecondition, "not the leader; leader is %s", f.redirectTo)
	}
	grpc.SetTrailer(ctx, metadata.Pairs(LeaderTrailer, f.redirectTo))
	return status.Error(codes.FailedPrecondition, "not the leader")
}

func (f *fake) Execute(ctx context.Context, r *rolisv1.ExecuteRequest) (*rolisv1.ExecuteResponse, error) {
	f.calls.Add(1)
	if f.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := f.redirect(ctx); err != nil {
		return nil, err
	}
	resp := &rolisv1.ExecuteResponse{Epoch: 1, CommitTs: 42, ConditionFailed: f.condFail}
	for range r.Ops {
		resp.Results = append(resp.Results, &rolisv1.OpResult{Found: true, Value: []byte(f.addr)})
	}
	return resp, nil
}

func (f *fake) Begin(ctx context.Context, r *rolisv1.BeginRequest) (*rolisv1.BeginResponse, error) {
	return &rolisv1.BeginResponse{TxnId: f.nextTxn.Add(1)}, nil
}

func (f *fake) Put(ctx context.Context, r *rolisv1.PutRequest) (*rolisv1.PutResponse, error) {
	f.calls.Add(1)
	if err := f.redirect(ctx); err != nil {
		return nil, err
	}
	return &rolisv1.PutResponse{}, nil
}

func (f *fake) Commit(ctx context.Context, r *rolisv1.CommitRequest) (*rolisv1.CommitResponse, error) {
	if f.commitFails.Add(-1) >= 0 {
		return nil, status.Error(codes.Aborted, "conflict")
	}
	return &rolisv1.CommitResponse{Epoch: 1, CommitTs: r.TxnId}, nil
}

func (f *fake) Abort(ctx context.Context, r *rolisv1.AbortRequest) (*rolisv1.AbortResponse, error) {
	return &rolisv1.AbortResponse{}, nil
}

// ExecuteStream answers requests in batches of up to 8, in reverse order.
func (f *fake) ExecuteStream(s grpc.BidiStreamingServer[rolisv1.ExecuteRequest, rolisv1.ExecuteResponse]) error {
	var batch []*rolisv1.ExecuteRequest
	flush := func() error {
		for i := len(batch) - 1; i >= 0; i-- {
			r := batch[i]
			resp := &rolisv1.ExecuteResponse{Seq: r.Seq, Results: []*rolisv1.OpResult{{Found: true, Value: r.Ops[0].Key}}}
			if string(r.Ops[0].Key) == "abort" {
				resp = &rolisv1.ExecuteResponse{Seq: r.Seq, ErrorCode: int32(codes.Aborted), ErrorMessage: "conflict"}
			}
			if err := s.Send(resp); err != nil {
				return err
			}
		}
		batch = batch[:0]
		return nil
	}
	for {
		r, err := s.Recv()
		if err == io.EOF {
			return flush()
		}
		if err != nil {
			return err
		}
		batch = append(batch, r)
		if len(batch) == 8 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

func startFake(t *testing.T, f *fake) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = lis.Addr().String()
	s := grpc.NewServer()
	rolisv1.RegisterRolisServer(s, f)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return f.addr
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestExecuteFollowsNotLeaderTrailerToTheLeader(t *testing.T) {
	leader := &fake{}
	la := startFake(t, leader)
	follower := &fake{redirectTo: la}
	fa := startFake(t, follower)
	c := newClient(t, Config{Endpoints: []string{fa}})
	if err := c.Put(ctxT(t), []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if c.Target() != la || follower.calls.Load() != 1 || leader.calls.Load() != 1 {
		t.Fatalf("target %s follower calls %d leader calls %d", c.Target(), follower.calls.Load(), leader.calls.Load())
	}
	// The next call goes straight to the leader.
	if _, _, err := c.Get(ctxT(t), []byte("k")); err != nil || follower.calls.Load() != 1 {
		t.Fatalf("err %v follower calls %d", err, follower.calls.Load())
	}
}

func TestExecuteFollowsLeaderNamedInTheMessage(t *testing.T) {
	la := startFake(t, &fake{})
	fa := startFake(t, &fake{redirectTo: la, inMessage: true})
	c := newClient(t, Config{Endpoints: []string{fa}})
	if err := c.Put(ctxT(t), []byte("k"), []byte("v")); err != nil || c.Target() != la {
		t.Fatalf("err %v target %s", err, c.Target())
	}
}

func TestRedirectLoopIsBoundedByMaxRedirects(t *testing.T) {
	a, b := &fake{}, &fake{}
	aa, ba := startFake(t, a), startFake(t, b)
	a.redirectTo, b.redirectTo = ba, aa
	c := newClient(t, Config{Endpoints: []string{aa}, MaxRedirects: 3, Retry: RetryPolicy{MaxAttempts: -1}})
	err := c.Put(ctxT(t), []byte("k"), []byte("v"))
	if !errors.Is(err, ErrTooManyRedirects) || !errors.Is(err, ErrNotLeader) {
		t.Fatalf("err %v", err)
	}
	if n := a.calls.Load() + b.calls.Load(); n != 4 {
		t.Fatalf("%d calls, want 1 + 3 hops", n)
	}
}

func TestNegativeMaxRedirectsStaysOnTheEndpoint(t *testing.T) {
	la := startFake(t, &fake{})
	fa := startFake(t, &fake{redirectTo: la})
	c := newClient(t, Config{Endpoints: []string{fa}, MaxRedirects: -1})
	if err := c.Put(ctxT(t), []byte("k"), []byte("v")); !errors.Is(err, ErrNotLeader) || c.Target() != fa {
		t.Fatalf("err %v target %s; want ErrNotLeader from %s", err, c.Target(), fa)
	}
}

func TestNotLeaderWithoutAddressTriesTheNextEndpoint(t *testing.T) {
	fa := startFake(t, &fake{notLeader: true})
	la := startFake(t, &fake{})
	c := newClient(t, Config{Endpoints: []string{fa, la}})
	if err := c.Put(ctxT(t), []byte("k"), []byte("v")); err != nil || c.Target() != la {
		t.Fatalf("err %v target %s", err, c.Target())
	}
}

func TestDialFailureTriesTheNextEndpointEvenForWrites(t *testing.T) {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := lis.Addr().String()
	lis.Close()
	la := startFake(t, &fake{})
	c := newClient(t, Config{Endpoints: []string{dead, la}})
	if err := c.Put(ctxT(t), []byte("k"), []byte("v")); err != nil || c.Target() != la {
		t.Fatalf("err %v target %s", err, c.Target())
	}
}

// A leader paused with SIGSTOP keeps its connections open and answers
// nothing: the call that timed out is not sent again (its outcome is
// unknown), but the next one goes to another endpoint.
func TestTimeoutOnASilentTargetSendsTheNextCallElsewhere(t *testing.T) {
	silent := &fake{hang: true}
	sa := startFake(t, silent)
	la := startFake(t, &fake{})
	c := newClient(t, Config{Endpoints: []string{sa, la}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := c.Put(ctx, []byte("k"), []byte("v")); err == nil {
		t.Fatal("a call to a silent member succeeded")
	}
	if silent.calls.Load() != 1 || c.Target() != la {
		t.Fatalf("%d calls to the silent member, target %s; want 1 and %s", silent.calls.Load(), c.Target(), la)
	}
	if err := c.Put(ctxT(t), []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
}

func TestConditionFailedReturnsResultsAndSentinel(t *testing.T) {
	la := startFake(t, &fake{condFail: true})
	c := newClient(t, Config{Endpoints: []string{la}})
	r, err := c.Execute(ctxT(t), Get([]byte("a")), PutIf([]byte("a"), []byte("x"), []byte("y")))
	if !errors.Is(err, ErrConditionFailed) || r == nil || len(r.Results) != 2 || !r.ConditionFailed {
		t.Fatalf("r %+v err %v", r, err)
	}
}

func TestTxnRunsTheFunctionAgainAfterAbortedCommit(t *testing.T) {
	f := &fake{}
	f.commitFails.Store(2)
	la := startFake(t, f)
	c := newClient(t, Config{Endpoints: []string{la}, Retry: RetryPolicy{MaxAttempts: 5, BaseDelay: time.Microsecond}})
	runs := 0
	info, err := c.TxnCommit(ctxT(t), func(tx *Tx) error { runs++; return tx.Put(ctxT(t), []byte("k"), []byte("v")) })
	if err != nil || runs != 3 || info.CommitTS != 3 {
		t.Fatalf("err %v runs %d info %+v", err, runs, info)
	}
}

func TestTxnFollowsRedirectOfAWrite(t *testing.T) {
	la := startFake(t, &fake{})
	fa := startFake(t, &fake{redirectTo: la})
	c := newClient(t, Config{Endpoints: []string{fa}})
	var where []string
	err := c.Txn(ctxT(t), func(tx *Tx) error {
		where = append(where, tx.Endpoint())
		return tx.Put(ctxT(t), []byte("k"), []byte("v"))
	})
	if err != nil || strings.Join(where, ",") != fa+","+la {
		t.Fatalf("err %v ran on %v", err, where)
	}
}

func TestTxnReturnsOtherErrorsOfTheFunctionUnretried(t *testing.T) {
	la := startFake(t, &fake{})
	c := newClient(t, Config{Endpoints: []string{la}})
	boom := errors.New("boom")
	runs := 0
	if err := c.Txn(ctxT(t), func(tx *Tx) error { runs++; return boom }); err != boom || runs != 1 {
		t.Fatalf("err %v runs %d", err, runs)
	}
}

func TestPipelineMatchesOutOfOrderResponsesBySeq(t *testing.T) {
	la := startFake(t, &fake{})
	c := newClient(t, Config{Endpoints: []string{la}})
	p, err := c.NewPipeline(ctxT(t), PipelineOptions{MaxInFlight: 16})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	var wg sync.WaitGroup
	var bad, aborts atomic.Int32
	for i := range n {
		key := fmt.Sprintf("k%d", i)
		if i%100 == 7 {
			key = "abort"
		}
		wg.Add(1)
		err := p.ExecuteAsync(ctxT(t), []Op{Get([]byte(key))}, func(r *Result, err error) {
			defer wg.Done()
			switch {
			case key == "abort" && errors.Is(err, ErrAborted):
				aborts.Add(1)
			case err != nil || string(r.Results[0].Value) != key:
				bad.Add(1)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if p.InFlight() > 16 {
			t.Fatalf("window exceeded: %d", p.InFlight())
		}
	}
	if err := p.Close(); err != nil { // flushes the last partial batch
		t.Fatal(err)
	}
	wg.Wait()
	if bad.Load() != 0 || aborts.Load() != 10 {
		t.Fatalf("bad %d aborts %d", bad.Load(), aborts.Load())
	}
	if _, err := p.Execute(ctxT(t), Get([]byte("x"))); err == nil {
		t.Fatal("execute after close succeeded")
	}
}

// One endpoint (a Service address) whose server was down for a while and is
// back: the next call must reach it within about a second. gRPC's default
// reconnect backoff (1 s growing by 1.6) would wait until ~9 s here, which
// is how a client kept failing long after a failover had moved the Service.
func TestSingleEndpointReconnectsWithinASecondOfTheServerComingBack(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	c := newClient(t, Config{Endpoints: []string{addr}})
	down := time.Now()
	for time.Since(down) < 6*time.Second { // failed attempts grow the backoff
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		if err := c.Put(ctx, []byte("k"), []byte("v")); err == nil {
			t.Fatal("a call succeeded with no server")
		}
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
	lis, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	s := grpc.NewServer()
	rolisv1.RegisterRolisServer(s, &fake{addr: addr})
	go s.Serve(lis) //nolint:errcheck
	t.Cleanup(s.Stop)
	up := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Put(ctx, []byte("k"), []byte("v"))
		cancel()
		if err == nil {
			break
		}
		if time.Since(up) > 5*time.Second {
			t.Fatalf("no call reached the server 5 s after it came back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Within the 1 s cap (plus jitter and a loaded machine's slack); the
	// default backoff's next attempt would come 2-4 s after `up`.
	if gap := time.Since(up); gap > 2*time.Second {
		t.Fatalf("reconnected %v after the server came back; want about 1 s at most", gap)
	}
}
