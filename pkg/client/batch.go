package client

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// BatchDone receives the outcome of request i of a batch sent with
// ExecuteBatchAsync: the wire response (with ErrConditionFailed when its
// condition_failed is set), or nil and the error.
type BatchDone func(i int, resp *rolisv1.ExecuteResponse, err error)

// BatchPipeline keeps many one-shot transactions in flight on one
// ExecuteBatchStream: each stream message carries a batch of transactions
// and each reply the responses that are ready, so the cost of a gRPC message
// is shared by many transactions. Every transaction is its own (a batch is
// not atomic). It is safe for concurrent use, and like Pipeline it neither
// retries nor follows redirects by itself.
type BatchPipeline struct {
	c             *Client
	stream        rolisv1.Rolis_ExecuteBatchStreamClient
	cancel        context.CancelFunc
	ep            *endpoint
	serverRetries uint32
	maxInFlight   int
	room          chan struct{} // a nudge after replies free room in the window
	recvDone      chan struct{}

	sendMu sync.Mutex
	batch  rolisv1.ExecuteBatchRequest // reused under sendMu

	mu       sync.Mutex
	inFlight int
	seq      uint64
	pending  map[uint64]batchEntry
	err      error // terminal error of the stream
	closed   bool
}

type batchEntry struct {
	done BatchDone
	i    int
}

// NewBatchPipeline opens an ExecuteBatchStream to the current target.
// opts.MaxInFlight bounds the transactions sent and not yet answered (0 =
// 64); ctx bounds the life of the stream.
func (c *Client) NewBatchPipeline(ctx context.Context, opts PipelineOptions) (*BatchPipeline, error) {
	opts = opts.withDefaults()
	ep := c.target.Load()
	stream, cancel, err := openStream(ctx, "ExecuteBatchStream", ep, rolisv1.RolisClient.ExecuteBatchStream,
		grpc.ForceCodecV2(newBatchCodec()))
	if err != nil {
		return nil, err
	}
	p := &BatchPipeline{
		c: c, stream: stream, cancel: cancel, ep: ep, serverRetries: c.cfg.ServerRetries,
		maxInFlight: opts.MaxInFlight,
		room:        make(chan struct{}, 1),
		recvDone:    make(chan struct{}),
		pending:     make(map[uint64]batchEntry, opts.MaxInFlight),
	}
	go p.receive()
	return p, nil
}

// Endpoint returns the address the stream goes to.
func (p *BatchPipeline) Endpoint() string { return p.ep.addr }

// ExecuteBatchAsync sends reqs as one stream message, each request its own
// transaction, after waiting until the window has room for all of them (a
// batch larger than the window waits for an empty window). It sets each
// request's Seq, and MaxRetries when zero; the requests may be reused once
// it returns (they are serialized by then). done is called once per request
// from the receiving goroutine, so it must not block. The error returned is
// non-nil only when nothing was sent, and then done is not called.
func (p *BatchPipeline) ExecuteBatchAsync(ctx context.Context, reqs []*rolisv1.ExecuteRequest, done BatchDone) error {
	if len(reqs) == 0 {
		return nil
	}
	if err := p.reserve(ctx, len(reqs)); err != nil {
		return err
	}
	p.mu.Lock()
	if p.err != nil || p.closed {
		err := p.err
		p.releaseLocked(len(reqs))
		p.mu.Unlock()
		if err == nil {
			err = ErrClosed
		}
		return err
	}
	first := p.seq + 1
	for i, r := range reqs {
		p.seq++
		r.Seq = p.seq
		if r.MaxRetries == 0 {
			r.MaxRetries = p.serverRetries
		}
		p.pending[r.Seq] = batchEntry{done: done, i: i}
	}
	p.mu.Unlock()

	p.sendMu.Lock()
	p.batch.Requests = reqs
	err := p.stream.Send(&p.batch)
	p.batch.Requests = nil
	p.sendMu.Unlock()
	if err == nil {
		return nil
	}
	// Not sent. Take back what the receiver has not failed already.
	if errors.Is(err, io.EOF) { // the real error comes from Recv
		<-p.recvDone
		err = p.terminalErr()
	} else {
		err = wrapErr("ExecuteBatchStream", err, nil)
	}
	var mine []int
	p.mu.Lock()
	for s := first; s < first+uint64(len(reqs)); s++ {
		if e, ok := p.pending[s]; ok {
			delete(p.pending, s)
			mine = append(mine, e.i)
		}
	}
	p.releaseLocked(len(mine))
	p.mu.Unlock()
	if len(mine) == len(reqs) {
		return err
	}
	for _, i := range mine {
		done(i, nil, err)
	}
	return nil
}

// reserve waits until n more transactions fit in the window.
func (p *BatchPipeline) reserve(ctx context.Context, n int) error {
	for {
		p.mu.Lock()
		if p.inFlight == 0 || p.inFlight+n <= p.maxInFlight {
			p.inFlight += n
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
		select {
		case <-p.room:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.recvDone:
			return p.terminalErr()
		}
	}
}

func (p *BatchPipeline) releaseLocked(n int) {
	if n == 0 {
		return
	}
	p.inFlight -= n
	select {
	case p.room <- struct{}{}:
	default:
	}
}

func (p *BatchPipeline) receive() {
	defer close(p.recvDone)
	for {
		reply, err := p.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = ErrClosed
			} else {
				err = wrapErr("ExecuteBatchStream", err, p.stream.Trailer())
			}
			p.failAll(err)
			return
		}
		resps := reply.GetResponses()
		entries := make([]batchEntry, len(resps))
		p.mu.Lock()
		n := 0
		for k, r := range resps {
			if e, ok := p.pending[r.GetSeq()]; ok {
				delete(p.pending, r.GetSeq())
				entries[k] = e
				n++
			}
		}
		p.releaseLocked(n)
		p.mu.Unlock()
		for k, r := range resps {
			e := entries[k]
			if e.done == nil {
				continue // not ours (a server bug); nothing waits for it
			}
			if err := p.c.streamOutcome("ExecuteBatchStream", r); err != nil && !errors.Is(err, ErrConditionFailed) {
				e.done(e.i, nil, err)
			} else {
				e.done(e.i, r, err)
			}
		}
	}
}

func (p *BatchPipeline) failAll(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	pend := p.pending
	p.pending = map[uint64]batchEntry{}
	p.releaseLocked(len(pend))
	p.mu.Unlock()
	err = inDoubt(err)
	for _, e := range pend {
		e.done(e.i, nil, err)
	}
}

func (p *BatchPipeline) terminalErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	return ErrClosed
}

// InFlight returns the number of transactions sent and not yet answered.
func (p *BatchPipeline) InFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inFlight
}

// Close ends the stream after the transactions in flight are answered (or
// after 10 s), then frees it. Transactions still pending then fail.
func (p *BatchPipeline) Close() error {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	p.mu.Unlock()
	if already {
		return nil
	}
	p.sendMu.Lock()
	_ = p.stream.CloseSend()
	p.sendMu.Unlock()
	return closeStream(p.recvDone, p.cancel, p.terminalErr)
}

// closeStream waits up to 10 s for the receiver of a half-closed stream to
// finish, cancels the stream and returns its terminal error (nil when it
// ended cleanly).
func closeStream(recvDone <-chan struct{}, cancel context.CancelFunc, terminal func() error) error {
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-recvDone:
	case <-t.C:
	}
	cancel()
	<-recvDone
	if err := terminal(); !errors.Is(err, ErrClosed) {
		return err
	}
	return nil
}

// inDoubt marks a stream's error for transactions that were sent and not
// answered: they may have committed.
func inDoubt(err error) error {
	if e, ok := err.(*Error); ok {
		c := *e
		c.InDoubt = true
		return &c
	}
	return err
}
