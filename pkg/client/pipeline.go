package client

import (
	"context"
	"errors"
	"io"
	"sync"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"google.golang.org/grpc"
)

// PipelineOptions configures a Pipeline.
type PipelineOptions struct {
	// MaxInFlight bounds the transactions sent and not yet answered; 0 means 64.
	// ExecuteAsync blocks while the window is full.
	MaxInFlight int
}

func (o PipelineOptions) withDefaults() PipelineOptions {
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	return o
}

// openStream opens a stream of ep (on one of its connections) whose life
// ctx bounds; cancel ends it.
func openStream[S any](ctx context.Context, op string, ep *endpoint,
	open func(rolisv1.RolisClient, context.Context, ...grpc.CallOption) (S, error), opts ...grpc.CallOption) (S, context.CancelFunc, error) {
	sctx, cancel := context.WithCancel(ctx)
	stream, err := open(ep.rolis[ep.pick()], sctx, opts...)
	if err != nil {
		cancel()
		return stream, nil, wrapErr(op, err, nil)
	}
	return stream, cancel, nil
}

// Pipeline keeps many one-shot transactions in flight on one ExecuteStream
// (a bidirectional gRPC stream to the current target): requests carry a
// sequence number and responses may come back in any order. It is safe for
// concurrent use.
//
// A Pipeline does not retry or follow redirects by itself: a transaction that
// aborts or reaches a follower completes with ErrAborted or ErrNotLeader
// (the client's target then moves to the leader, so a new Pipeline goes
// there). If the stream breaks, every pending and later call fails with the
// stream's error.
type Pipeline struct {
	c             *Client
	stream        rolisv1.Rolis_ExecuteStreamClient
	cancel        context.CancelFunc
	ep            *endpoint
	serverRetries uint32
	window        chan struct{}
	recvDone      chan struct{}

	sendMu sync.Mutex

	mu      sync.Mutex
	seq     uint64
	pending map[uint64]func(*rolisv1.ExecuteResponse, error)
	err     error // terminal error of the stream
	closed  bool
}

// NewPipeline opens an ExecuteStream to the current target. ctx bounds the
// life of the stream.
func (c *Client) NewPipeline(ctx context.Context, opts PipelineOptions) (*Pipeline, error) {
	opts = opts.withDefaults()
	ep := c.target.Load()
	stream, cancel, err := openStream(ctx, "ExecuteStream", ep, rolisv1.RolisClient.ExecuteStream)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{
		c: c, stream: stream, cancel: cancel, ep: ep, serverRetries: c.cfg.ServerRetries,
		window:   make(chan struct{}, opts.MaxInFlight),
		recvDone: make(chan struct{}),
		pending:  make(map[uint64]func(*rolisv1.ExecuteResponse, error), opts.MaxInFlight),
	}
	go p.receive()
	return p, nil
}

// Endpoint returns the address the stream goes to.
func (p *Pipeline) Endpoint() string { return p.ep.addr }

// ExecuteAsync sends ops as one transaction and returns at once (after
// waiting for room in the window); done is called with the outcome from the
// pipeline's receiving goroutine, so it must not block. The error returned
// is non-nil only when the request was not sent, and then done is not called.
func (p *Pipeline) ExecuteAsync(ctx context.Context, ops []Op, done func(*Result, error)) error {
	req := &rolisv1.ExecuteRequest{Ops: make([]*rolisv1.Op, len(ops)), MaxRetries: p.serverRetries}
	for i := range ops {
		req.Ops[i] = ops[i].proto()
	}
	return p.ExecuteRequestAsync(ctx, req, func(r *rolisv1.ExecuteResponse, err error) {
		if r == nil {
			done(nil, err)
			return
		}
		done(resultFromProto(r), err)
	})
}

// ExecuteRequestAsync is ExecuteAsync for callers that build the wire
// request themselves (it saves the conversions, for load generators). The
// pipeline sets req.Seq; req must not be modified afterwards. done gets the
// wire response, with ErrConditionFailed when its condition_failed is set,
// or nil and the error.
func (p *Pipeline) ExecuteRequestAsync(ctx context.Context, req *rolisv1.ExecuteRequest, done func(*rolisv1.ExecuteResponse, error)) error {
	select {
	case p.window <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.recvDone:
		return p.terminalErr()
	}
	p.mu.Lock()
	if p.err != nil || p.closed {
		err := p.err
		p.mu.Unlock()
		<-p.window
		if err == nil {
			err = ErrClosed
		}
		return err
	}
	p.seq++
	req.Seq = p.seq
	p.pending[req.Seq] = done
	p.mu.Unlock()

	p.sendMu.Lock()
	err := p.stream.Send(req)
	p.sendMu.Unlock()
	if err != nil {
		p.mu.Lock()
		_, mine := p.pending[req.Seq]
		delete(p.pending, req.Seq)
		p.mu.Unlock()
		if !mine {
			return nil // the receiver already failed it and called done
		}
		<-p.window
		if errors.Is(err, io.EOF) { // the real error comes from Recv
			<-p.recvDone
			return p.terminalErr()
		}
		return wrapErr("ExecuteStream", err, nil)
	}
	return nil
}

// Execute sends ops as one transaction and waits for its outcome.
func (p *Pipeline) Execute(ctx context.Context, ops ...Op) (*Result, error) {
	type outcome struct {
		r   *Result
		err error
	}
	ch := make(chan outcome, 1)
	if err := p.ExecuteAsync(ctx, ops, func(r *Result, err error) { ch <- outcome{r, err} }); err != nil {
		return nil, err
	}
	select {
	case o := <-ch:
		return o.r, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *Pipeline) receive() {
	defer close(p.recvDone)
	for {
		resp, err := p.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = ErrClosed
			} else {
				err = wrapErr("ExecuteStream", err, p.stream.Trailer())
			}
			p.failAll(err)
			return
		}
		p.mu.Lock()
		done, ok := p.pending[resp.GetSeq()]
		delete(p.pending, resp.GetSeq())
		p.mu.Unlock()
		if !ok {
			continue // not ours (a server bug); nothing waits for it
		}
		<-p.window
		if err := p.c.streamOutcome("ExecuteStream", resp); err != nil && !errors.Is(err, ErrConditionFailed) {
			done(nil, err)
		} else {
			done(resp, err)
		}
	}
}

// streamOutcome is the error of a streamed response: its error_code as an
// *Error (a not-leader one moves the client's target to the leader),
// ErrConditionFailed, or nil.
func (c *Client) streamOutcome(op string, r *rolisv1.ExecuteResponse) error {
	switch {
	case r.GetErrorCode() != 0:
		e := newError(op, codeOf(r.GetErrorCode()), r.GetErrorMessage(), nil)
		if e.Leader != "" {
			_ = c.SetTarget(e.Leader)
		}
		return e
	case r.GetConditionFailed():
		return ErrConditionFailed
	}
	return nil
}

func (p *Pipeline) failAll(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	pend := p.pending
	p.pending = map[uint64]func(*rolisv1.ExecuteResponse, error){}
	p.mu.Unlock()
	err = inDoubt(err) // sent but unanswered: they may have committed
	for _, done := range pend {
		<-p.window
		done(nil, err)
	}
}

func (p *Pipeline) terminalErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	return ErrClosed
}

// InFlight returns the number of transactions sent and not yet answered.
func (p *Pipeline) InFlight() int { return len(p.window) }

// Close ends the stream after the transactions in flight are answered (or
// after 10 s), then frees it. Transactions still pending then fail with
// ErrClosed.
func (p *Pipeline) Close() error {
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
