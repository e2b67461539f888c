package client

import (
	"context"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
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
	*pipelineStream[rolisv1.ExecuteRequest, rolisv1.ExecuteResponse, pipelineDone]
}

type pipelineDone = func(*rolisv1.ExecuteResponse, error)

// NewPipeline opens an ExecuteStream to the current target. ctx bounds the
// life of the stream.
func (c *Client) NewPipeline(ctx context.Context, opts PipelineOptions) (*Pipeline, error) {
	opts = opts.withDefaults()
	s, err := openPipelineStream(ctx, c, "ExecuteStream", make(chanWindow, opts.MaxInFlight),
		rolisv1.RolisClient.ExecuteStream, func(done pipelineDone, err error) { done(nil, err) })
	if err != nil {
		return nil, err
	}
	p := &Pipeline{s}
	p.start(p.receive)
	return p, nil
}

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
	first, err := p.enqueue(ctx, 1, func(_ int, seq uint64) pipelineDone {
		req.Seq = seq
		return done
	})
	if err != nil {
		return err
	}
	if unsent, err := p.send(req, first, 1); len(unsent) > 0 {
		return err
	}
	return nil // sent, or the receiver already failed it and called done
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

// receive hands a response to the done of its transaction.
func (p *Pipeline) receive(resp *rolisv1.ExecuteResponse) {
	p.mu.Lock()
	done, ok := p.takeLocked(resp.GetSeq())
	p.mu.Unlock()
	if !ok {
		return
	}
	p.win.release(1)
	done(p.result(resp))
}
