package client

import (
	"context"

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
	*pipelineStream[rolisv1.ExecuteBatchRequest, rolisv1.ExecuteBatchResponse, batchEntry]
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
	s, err := openPipelineStream(ctx, c, "ExecuteBatchStream", newCountWindow(opts.MaxInFlight),
		rolisv1.RolisClient.ExecuteBatchStream, func(e batchEntry, err error) { e.done(e.i, nil, err) },
		grpc.ForceCodecV2(newBatchCodec()))
	if err != nil {
		return nil, err
	}
	p := &BatchPipeline{s}
	p.start(p.receive)
	return p, nil
}

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
	first, err := p.enqueue(ctx, len(reqs), func(i int, seq uint64) batchEntry {
		r := reqs[i]
		r.Seq = seq
		if r.MaxRetries == 0 {
			r.MaxRetries = p.serverRetries
		}
		return batchEntry{done: done, i: i}
	})
	if err != nil {
		return err
	}
	unsent, err := p.send(&rolisv1.ExecuteBatchRequest{Requests: reqs}, first, len(reqs))
	if len(unsent) == len(reqs) {
		return err // nothing was sent
	}
	for _, e := range unsent {
		done(e.i, nil, err)
	}
	return nil
}

// receive hands each response of a reply to the done of its transaction.
func (p *BatchPipeline) receive(reply *rolisv1.ExecuteBatchResponse) {
	resps := reply.GetResponses()
	entries := make([]batchEntry, len(resps))
	n := 0
	p.mu.Lock()
	for k, r := range resps {
		if e, ok := p.takeLocked(r.GetSeq()); ok {
			entries[k] = e
			n++
		}
	}
	p.mu.Unlock()
	p.win.release(n)
	for k, r := range resps {
		if e := entries[k]; e.done != nil {
			resp, err := p.result(r)
			e.done(e.i, resp, err)
		}
	}
}
