package server_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// batchOutcome collects the callbacks of ExecuteBatchAsync.
type batchOutcome struct {
	mu    sync.Mutex
	calls map[uint64]int // seq -> times answered
	errs  map[uint64]error
	wg    sync.WaitGroup
}

func newBatchOutcome() *batchOutcome {
	return &batchOutcome{calls: map[uint64]int{}, errs: map[uint64]error{}}
}

// send sends reqs as one batch and records each answer by the request's seq.
func (o *batchOutcome) send(t *testing.T, ctx context.Context, p *client.BatchPipeline, reqs []*rolisv1.ExecuteRequest) {
	t.Helper()
	o.wg.Add(len(reqs))
	err := p.ExecuteBatchAsync(ctx, reqs, func(i int, _ *rolisv1.ExecuteResponse, err error) {
		o.mu.Lock()
		o.calls[reqs[i].Seq]++
		o.errs[reqs[i].Seq] = err
		o.mu.Unlock()
		o.wg.Done()
	})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
}

func putReq(k, v string) *rolisv1.ExecuteRequest {
	return &rolisv1.ExecuteRequest{Ops: []*rolisv1.Op{{Kind: rolisv1.Op_PUT, Key: []byte(k), Value: []byte(v)}}}
}

// Batched one-shots: every transaction of every batch is answered exactly
// once, its write is visible to a later reader, and a bad transaction in a
// batch fails alone (a batch is not atomic).
func TestExecuteBatchStream_EveryTransactionAnsweredOnce_BadOneFailsAlone(t *testing.T) {
	_, cl := standalone(t)
	ctx := ctxFor(t, 30*time.Second)
	p, err := cl.NewBatchPipeline(ctx, client.PipelineOptions{MaxInFlight: 64})
	if err != nil {
		t.Fatal(err)
	}
	o := newBatchOutcome()
	const batches, per = 40, 16
	for b := 0; b < batches; b++ {
		reqs := make([]*rolisv1.ExecuteRequest, per)
		for i := range reqs {
			reqs[i] = putReq(fmt.Sprintf("b%03d-%02d", b, i), fmt.Sprintf("v%d", b*per+i))
		}
		if b == 7 {
			reqs[3] = putReq("", "empty key") // INVALID_ARGUMENT, alone
		}
		o.send(t, ctx, p, reqs)
	}
	o.wg.Wait()
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if len(o.calls) != batches*per {
		t.Fatalf("%d transactions answered, want %d", len(o.calls), batches*per)
	}
	bad := 0
	for seq, n := range o.calls {
		if n != 1 {
			t.Errorf("seq %d answered %d times", seq, n)
		}
		if err := o.errs[seq]; err != nil {
			wantCode(t, fmt.Sprintf("seq %d", seq), err, codes.InvalidArgument)
			bad++
		}
	}
	if bad != 1 {
		t.Errorf("%d transactions failed, want the 1 with an empty key", bad)
	}
	for _, k := range []string{"b000-00", "b007-02", "b007-04", "b039-15"} {
		if _, ok := mustGet(t, cl, k); !ok {
			t.Errorf("%s not written", k)
		}
	}
	if v, _ := mustGet(t, cl, "b039-15"); v != fmt.Sprint("v", 39*per+15) {
		t.Errorf("b039-15 = %q", v)
	}
}

// A batch with more transactions than --max-stream-inflight: each gets
// RESOURCE_EXHAUSTED and none runs; the stream keeps serving.
func TestExecuteBatchStream_BatchOverTheLimitIsResourceExhaustedAndWritesNothing(t *testing.T) {
	_, cl := standalone(t, "--max-stream-inflight=8")
	ctx := ctxFor(t, 30*time.Second)
	p, err := cl.NewBatchPipeline(ctx, client.PipelineOptions{MaxInFlight: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	big := make([]*rolisv1.ExecuteRequest, 9)
	for i := range big {
		big[i] = putReq(fmt.Sprintf("big%d", i), "x")
	}
	o := newBatchOutcome()
	o.send(t, ctx, p, big)
	o.wg.Wait()
	for seq, err := range o.errs {
		wantCode(t, fmt.Sprintf("seq %d of a batch of 9", seq), err, codes.ResourceExhausted)
	}
	if _, ok := mustGet(t, cl, "big0"); ok {
		t.Error("a transaction of the refused batch was written")
	}
	small := newBatchOutcome()
	small.send(t, ctx, p, []*rolisv1.ExecuteRequest{putReq("small0", "y"), putReq("small1", "y")})
	small.wg.Wait()
	for seq, err := range small.errs {
		if err != nil {
			t.Errorf("seq %d after the refused batch: %v", seq, err)
		}
	}
}

// Bytes that are not an ExecuteBatchRequest on the stream: the transactions
// read before are answered, then the stream ends with INVALID_ARGUMENT
// (not as a clean end of stream); the server keeps serving.
func TestExecuteBatchStream_UndecodableMessageEndsTheStreamWithInvalidArgument(t *testing.T) {
	m, cl := standalone(t)
	_, cc := rawRolis(t, m.ClientAddr)
	ctx := ctxFor(t, 20*time.Second)
	s, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true},
		"/rolis.v1.Rolis/ExecuteBatchStream", grpc.ForceCodec(rawBytes{}))
	if err != nil {
		t.Fatal(err)
	}
	good, err := proto.Marshal(&rolisv1.ExecuteBatchRequest{Requests: []*rolisv1.ExecuteRequest{
		{Seq: 1, Ops: []*rolisv1.Op{{Kind: rolisv1.Op_PUT, Key: []byte("before"), Value: []byte("garbage")}}}}})
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}
	for _, msg := range [][]byte{good, garbage} {
		if err := s.SendMsg(&msg); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	var answered []uint64
	for {
		var out []byte
		if err = s.RecvMsg(&out); err != nil {
			break
		}
		var reply rolisv1.ExecuteBatchResponse
		if err := proto.Unmarshal(out, &reply); err != nil {
			t.Fatal(err)
		}
		for _, r := range reply.Responses {
			answered = append(answered, r.Seq)
		}
	}
	wantCode(t, "stream after garbage", err, codes.InvalidArgument)
	if len(answered) != 1 || answered[0] != 1 {
		t.Errorf("answered %v before the garbage, want [1]", answered)
	}
	if v, _ := mustGet(t, cl, "before"); v != "garbage" {
		t.Errorf("the transaction before the garbage: before = %q", v)
	}
	mustPut(t, cl, "still", "serving")
}

// A stream that breaks fails every transaction it carried and that was not
// answered, once each and in doubt (it may have committed), on both kinds of
// pipeline: the server is stopped with transactions in flight, then killed.
func TestPipelinesFailEveryUnansweredTransactionInDoubtWhenTheServerDies(t *testing.T) {
	m, cl := standalone(t)
	ctx := ctxFor(t, time.Minute)
	p, err := cl.NewPipeline(ctx, client.PipelineOptions{MaxInFlight: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	bp, err := cl.NewBatchPipeline(ctx, client.PipelineOptions{MaxInFlight: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer bp.Close()
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var mu sync.Mutex
	var wg sync.WaitGroup
	calls := map[string]int{}
	var errs []error
	note := func(name string, err error) {
		mu.Lock()
		calls[name]++
		errs = append(errs, err)
		mu.Unlock()
		wg.Done()
	}
	for i := range n {
		name := fmt.Sprintf("stream-%d", i)
		wg.Add(1)
		if err := p.ExecuteRequestAsync(ctx, putReq(name, "v"), func(_ *rolisv1.ExecuteResponse, err error) { note(name, err) }); err != nil {
			t.Fatalf("send %s: %v", name, err)
		}
	}
	reqs := make([]*rolisv1.ExecuteRequest, n)
	for i := range reqs {
		reqs[i] = putReq(fmt.Sprintf("batch-%d", i), "v")
	}
	wg.Add(n)
	if err := bp.ExecuteBatchAsync(ctx, reqs, func(i int, _ *rolisv1.ExecuteResponse, err error) {
		note(fmt.Sprintf("batch-%d", i), err)
	}); err != nil {
		t.Fatalf("send batch: %v", err)
	}
	if _, err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("after the server died, %d of %d transactions were answered", len(errs), 2*n)
	}
	mu.Lock()
	defer mu.Unlock()
	for name, c := range calls {
		if c != 1 {
			t.Errorf("%s answered %d times", name, c)
		}
	}
	for _, err := range errs {
		var e *client.Error
		if !errors.As(err, &e) || !e.InDoubt {
			t.Errorf("a transaction in flight failed with %v, want an in-doubt *client.Error", err)
		}
	}
	if p.InFlight() != 0 || bp.InFlight() != 0 {
		t.Errorf("in flight after the end: %d and %d, want 0", p.InFlight(), bp.InFlight())
	}
}
