package main

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
)

// benchBatch is one batch in flight: what the replies need to record the
// outcome of each of its transactions.
type benchBatch struct {
	start    time.Time
	measured bool
	readOnly []bool
	left     int // replies still expected
}

// batchWorker keeps o.pipeline transactions in flight on one
// ExecuteBatchStream, o.batch transactions per stream message. The requests
// are built in place and reused once sent; a batch's bookkeeping is reused
// once all its replies are in.
func batchWorker(ctx context.Context, c *client.Client, gn txnSource, o benchOptions,
	deadline time.Time, measuring *atomic.Bool, s *workerStats) {
	p, err := c.NewBatchPipeline(ctx, client.PipelineOptions{MaxInFlight: o.pipeline})
	if err != nil {
		s.errors.Add(1)
		s.firstErr = err
		return
	}
	nb := max(1, o.pipeline/o.batch)
	free := make(chan *benchBatch, nb)
	for range nb {
		free <- &benchBatch{readOnly: make([]bool, o.batch)}
	}
	bufs := make([]reqBuf, o.batch)
	reqs := make([]*rolisv1.ExecuteRequest, o.batch)
	for i := range bufs {
		bufs[i].req.MaxRetries = o.serverRetry
		reqs[i] = &bufs[i].req
	}
	for {
		var b *benchBatch
		select {
		case b = <-free:
		case <-ctx.Done():
		}
		if b == nil || !time.Now().Before(deadline) || ctx.Err() != nil {
			break
		}
		b.start = time.Now()
		b.measured = measuring.Load()
		b.left = o.batch
		for i := range bufs {
			b.readOnly[i] = gn.fill(&bufs[i])
		}
		// The callbacks run on the pipeline's one receiving goroutine, so
		// they may update s and b without locks; s is read after Close.
		err := p.ExecuteBatchAsync(ctx, reqs, func(i int, resp *rolisv1.ExecuteResponse, err error) {
			s.response(resp)
			s.outcome(time.Since(b.start), b.readOnly[i], err, b.measured)
			if b.left--; b.left == 0 {
				free <- b
			}
		})
		if err != nil {
			s.errors.Add(uint64(o.batch)) // counted here: the callbacks will not run
			break
		}
	}
	if err := p.Close(); err != nil && !errors.Is(err, context.Canceled) {
		s.errors.Add(1)
	}
}
