package main

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
)

// The pipelined and batched forms of bench: workers that keep transactions
// in flight on streams, and open a new stream when one breaks.

// benchBatch is one batch in flight: what the replies need to record the
// outcome of each of its transactions.
type benchBatch struct {
	start    time.Time
	measured bool
	readOnly []bool
	left     int // replies still expected
}

// streamRun is what a pipelined or batched worker's streams share: the
// client, the run's deadline, and how to go on after a stream broke
// (bench_follow.go).
type streamRun struct {
	c         *client.Client
	o         benchOptions
	deadline  time.Time
	measuring *atomic.Bool
	f         *follower
	// stall: a stream that answers nothing for this long while
	// transactions wait is given up (a member cut off without a reset).
	stall time.Duration
}

// follow runs session on one stream after another until the deadline:
// session returns the stream's address and whether it served anything.
func (r *streamRun) follow(ctx context.Context, s *workerStats, session func(ctx context.Context) (string, bool, error)) {
	empty := 0
	for time.Now().Before(r.deadline) && ctx.Err() == nil {
		from, served, err := session(ctx)
		if err != nil { // the stream did not open
			s.failN(1, err)
		}
		if !time.Now().Before(r.deadline) || ctx.Err() != nil {
			return
		}
		if served {
			empty = 0
		} else {
			empty++
		}
		r.f.moveOn(from)
		if !sleepUntil(ctx, reopenDelay(empty), r.deadline) {
			return
		}
	}
}

// batchWorker keeps o.pipeline transactions in flight on an
// ExecuteBatchStream, o.batch transactions per stream message, and opens a
// new stream when one breaks. The requests are built in place and reused
// once sent; a batch's bookkeeping is reused once all its replies are in.
func batchWorker(ctx context.Context, r *streamRun, gn txnSource, s *workerStats) {
	o := r.o
	bufs := make([]reqBuf, o.batch)
	reqs := make([]*rolisv1.ExecuteRequest, o.batch)
	for i := range bufs {
		bufs[i].req.MaxRetries = o.serverRetry
		reqs[i] = &bufs[i].req
	}
	r.follow(ctx, s, func(ctx context.Context) (string, bool, error) {
		from := r.c.Target()
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		p, err := r.c.NewBatchPipeline(sctx, client.PipelineOptions{MaxInFlight: o.pipeline})
		if err != nil {
			return from, false, err
		}
		var broken, served atomic.Bool
		nb := max(1, o.pipeline/o.batch)
		free := make(chan *benchBatch, nb)
		for range nb {
			free <- &benchBatch{readOnly: make([]bool, o.batch)}
		}
		stall := time.NewTimer(r.stall)
		defer stall.Stop()
		for !broken.Load() {
			var b *benchBatch
			stall.Reset(r.stall)
			select {
			case b = <-free:
			case <-ctx.Done():
			case <-stall.C:
				cancel() // fails what is in flight; Close returns at once
			}
			if b == nil || !time.Now().Before(r.deadline) || ctx.Err() != nil || sctx.Err() != nil {
				break
			}
			b.start = time.Now()
			b.measured = r.measuring.Load()
			b.left = o.batch
			for i := range bufs {
				b.readOnly[i] = gn.fill(&bufs[i])
			}
			// The callbacks run on the pipeline's one receiving goroutine, so
			// they may update s and b without locks; s is read after Close.
			err := p.ExecuteBatchAsync(sctx, reqs, func(i int, resp *rolisv1.ExecuteResponse, err error) {
				s.response(resp)
				s.outcome(time.Since(b.start), b.readOnly[i], err, b.measured)
				if err == nil {
					served.Store(true)
				} else if streamBroken(err) {
					broken.Store(true)
				}
				if b.left--; b.left == 0 {
					free <- b
				}
			})
			if err != nil {
				s.failN(uint64(o.batch), err) // counted here: the callbacks will not run
				break
			}
		}
		// A broken stream's transactions are counted already.
		if err := p.Close(); err != nil && !errors.Is(err, context.Canceled) && !broken.Load() {
			s.errors.Add(1)
			s.note(err)
		}
		return from, served.Load(), nil
	})
}

// pipelineWorker keeps o.pipeline transactions in flight on an
// ExecuteStream, one per message, and opens a new stream when one breaks.
func pipelineWorker(ctx context.Context, r *streamRun, gn txnSource, s *workerStats) {
	o := r.o
	r.follow(ctx, s, func(ctx context.Context) (string, bool, error) {
		from := r.c.Target()
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		p, err := r.c.NewPipeline(sctx, client.PipelineOptions{MaxInFlight: o.pipeline})
		if err != nil {
			return from, false, err
		}
		var broken, served atomic.Bool
		// The callbacks run on the pipeline's one receiving goroutine, so
		// they may update s without locks; s is read after Close has
		// drained them. slots mirrors the pipeline's window, so that the
		// clock starts when the transaction can be sent, not while it
		// waits for room.
		slots := make(chan struct{}, o.pipeline)
		stall := time.NewTimer(r.stall)
		defer stall.Stop()
		for !broken.Load() {
			got := false
			stall.Reset(r.stall)
			select {
			case slots <- struct{}{}:
				got = true
			case <-ctx.Done():
			case <-stall.C:
				cancel() // fails what is in flight; Close returns at once
			}
			start := time.Now()
			if !got || !start.Before(r.deadline) || ctx.Err() != nil || sctx.Err() != nil {
				break
			}
			req, ro := newRequest(gn, o.serverRetry)
			m := r.measuring.Load()
			err := p.ExecuteRequestAsync(sctx, req, func(resp *rolisv1.ExecuteResponse, err error) {
				s.response(resp)
				s.outcome(time.Since(start), ro, err, m)
				if err == nil {
					served.Store(true)
				} else if streamBroken(err) {
					broken.Store(true)
				}
				<-slots
			})
			if err != nil {
				s.failN(1, err) // counted here: the callback will not run
				break
			}
		}
		// A broken stream's transactions are counted already.
		if err := p.Close(); err != nil && !errors.Is(err, context.Canceled) && !broken.Load() {
			s.errors.Add(1)
			s.note(err)
		}
		return from, served.Load(), nil
	})
}
