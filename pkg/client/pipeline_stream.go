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

// pipelineStream is what Pipeline (ExecuteStream, a transaction per
// message) and BatchPipeline (ExecuteBatchStream, many per message) share:
// the stream and its receiving goroutine, sequence numbers and the pending
// transaction of each (an entry E, whose done the owner calls), the window
// of transactions in flight, the handling of a send that fails, and the end
// of the stream (a terminal error fails every pending transaction, in
// doubt).
type pipelineStream[Req, Resp, E any] struct {
	c             *Client
	op            string // the method, in errors
	stream        grpc.BidiStreamingClient[Req, Resp]
	cancel        context.CancelFunc
	ep            *endpoint
	serverRetries uint32
	win           window
	recvDone      chan struct{}
	fail          func(e E, err error) // ends a pending transaction with err

	sendMu sync.Mutex

	mu      sync.Mutex
	seq     uint64
	pending map[uint64]E
	err     error // terminal error of the stream
	closed  bool
}

// window bounds the transactions sent and not yet answered.
type window interface {
	// acquire waits for room for n more; it gives up when ctx ends (its
	// error) or when stop is closed (errStopped).
	acquire(ctx context.Context, n int, stop <-chan struct{}) error
	release(n int)
	inFlight() int
}

var errStopped = errors.New("stream stopped")

// chanWindow is a window of one slot per transaction (a buffered channel).
type chanWindow chan struct{}

func (w chanWindow) acquire(ctx context.Context, n int, stop <-chan struct{}) error {
	for k := range n {
		select {
		case w <- struct{}{}:
		case <-ctx.Done():
			w.release(k)
			return ctx.Err()
		case <-stop:
			w.release(k)
			return errStopped
		}
	}
	return nil
}

func (w chanWindow) release(n int) {
	for range n {
		<-w
	}
}

func (w chanWindow) inFlight() int { return len(w) }

// countWindow admits a group of transactions at once: when it fits, or
// when nothing is in flight (a group larger than the window waits for an
// empty window).
type countWindow struct {
	max  int
	room chan struct{} // a nudge after a release frees room

	mu   sync.Mutex
	used int
}

func newCountWindow(max int) *countWindow {
	return &countWindow{max: max, room: make(chan struct{}, 1)}
}

func (w *countWindow) acquire(ctx context.Context, n int, stop <-chan struct{}) error {
	for {
		w.mu.Lock()
		if w.used == 0 || w.used+n <= w.max {
			w.used += n
			w.mu.Unlock()
			return nil
		}
		w.mu.Unlock()
		select {
		case <-w.room:
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return errStopped
		}
	}
}

func (w *countWindow) release(n int) {
	if n == 0 {
		return
	}
	w.mu.Lock()
	w.used -= n
	w.mu.Unlock()
	select {
	case w.room <- struct{}{}:
	default:
	}
}

func (w *countWindow) inFlight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.used
}

// openPipelineStream opens a stream of the current target whose life ctx
// bounds. start then starts receiving.
func openPipelineStream[Req, Resp, E any](ctx context.Context, c *Client, op string, win window,
	open func(rolisv1.RolisClient, context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[Req, Resp], error),
	fail func(E, error), opts ...grpc.CallOption) (*pipelineStream[Req, Resp, E], error) {
	ep := c.target.Load()
	sctx, cancel := context.WithCancel(ctx)
	stream, err := open(ep.rolis[ep.pick()], sctx, opts...)
	if err != nil {
		cancel()
		return nil, wrapErr(op, err, nil)
	}
	s := &pipelineStream[Req, Resp, E]{
		c: c, op: op, stream: stream, cancel: cancel, ep: ep, serverRetries: c.cfg.ServerRetries,
		win: win, recvDone: make(chan struct{}), fail: fail, pending: make(map[uint64]E),
	}
	return s, nil
}

// start starts the receiving goroutine: handle gets every message received.
func (s *pipelineStream[Req, Resp, E]) start(handle func(*Resp)) { go s.receive(handle) }

// Endpoint returns the address the stream goes to.
func (s *pipelineStream[Req, Resp, E]) Endpoint() string { return s.ep.addr }

// InFlight returns the number of transactions sent and not yet answered.
func (s *pipelineStream[Req, Resp, E]) InFlight() int { return s.win.inFlight() }

// enqueue waits for room for n transactions in the window and registers
// them under the sequence numbers first .. first+n-1 (entry(k, seq) is the
// k-th's). It fails, registering nothing, when ctx ends or the stream has
// ended or is closed.
func (s *pipelineStream[Req, Resp, E]) enqueue(ctx context.Context, n int, entry func(k int, seq uint64) E) (first uint64, err error) {
	if err := s.win.acquire(ctx, n, s.recvDone); err != nil {
		if errors.Is(err, errStopped) {
			return 0, s.terminalErr()
		}
		return 0, err
	}
	s.mu.Lock()
	if s.err != nil || s.closed {
		err := s.err
		s.mu.Unlock()
		s.win.release(n)
		if err == nil {
			err = ErrClosed
		}
		return 0, err
	}
	first = s.seq + 1
	for k := range n {
		s.seq++
		s.pending[s.seq] = entry(k, s.seq)
	}
	s.mu.Unlock()
	return first, nil
}

// send sends msg, which carries the transactions enqueued as first ..
// first+n-1. When it fails, it takes back those of them the receiver has not
// failed already (their done is not called) and returns them with the error.
func (s *pipelineStream[Req, Resp, E]) send(msg *Req, first uint64, n int) (unsent []E, err error) {
	s.sendMu.Lock()
	err = s.stream.Send(msg)
	s.sendMu.Unlock()
	if err == nil {
		return nil, nil
	}
	s.mu.Lock()
	for seq := first; seq < first+uint64(n); seq++ {
		if e, ok := s.pending[seq]; ok {
			delete(s.pending, seq)
			unsent = append(unsent, e)
		}
	}
	s.mu.Unlock()
	s.win.release(len(unsent))
	if errors.Is(err, io.EOF) { // the real error comes from Recv
		<-s.recvDone
		return unsent, s.terminalErr()
	}
	return unsent, wrapErr(s.op, err, nil)
}

// takeLocked removes the pending transaction of seq (ok false: none, a
// server bug; nothing waits for it). The caller releases its room.
func (s *pipelineStream[Req, Resp, E]) takeLocked(seq uint64) (e E, ok bool) {
	e, ok = s.pending[seq]
	if ok {
		delete(s.pending, seq)
	}
	return e, ok
}

// result is what the done of a transaction gets for its response r: r with
// nil or ErrConditionFailed, or nil and the error of r's error_code (a
// not-leader one moves the client's target to the leader).
func (s *pipelineStream[Req, Resp, E]) result(r *rolisv1.ExecuteResponse) (*rolisv1.ExecuteResponse, error) {
	var err error
	switch {
	case r.GetErrorCode() != 0:
		e := newError(s.op, codeOf(r.GetErrorCode()), r.GetErrorMessage(), nil)
		if e.Leader != "" {
			_ = s.c.SetTarget(e.Leader)
		}
		return nil, e
	case r.GetConditionFailed():
		err = ErrConditionFailed
	}
	return r, err
}

func (s *pipelineStream[Req, Resp, E]) receive(handle func(*Resp)) {
	defer close(s.recvDone)
	for {
		m, err := s.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = ErrClosed
			} else {
				err = wrapErr(s.op, err, s.stream.Trailer())
			}
			s.failAll(err)
			return
		}
		handle(m)
	}
}

func (s *pipelineStream[Req, Resp, E]) failAll(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	pend := s.pending
	s.pending = map[uint64]E{}
	s.mu.Unlock()
	s.win.release(len(pend))
	err = inDoubt(err) // sent but unanswered: they may have committed
	for _, e := range pend {
		s.fail(e, err)
	}
}

func (s *pipelineStream[Req, Resp, E]) terminalErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return ErrClosed
}

// Close ends the stream after the transactions in flight are answered (or
// after 10 s), then frees it. Transactions still pending then fail.
func (s *pipelineStream[Req, Resp, E]) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if already {
		return nil
	}
	s.sendMu.Lock()
	_ = s.stream.CloseSend()
	s.sendMu.Unlock()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-s.recvDone:
	case <-t.C:
	}
	s.cancel()
	<-s.recvDone
	if err := s.terminalErr(); !errors.Is(err, ErrClosed) {
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
