// Package client is the Go client of rolisd, the Rolis transactional
// key-value server.
//
// A Client holds gRPC connections to one or more replicas and sends every
// call to the current leader: when a follower answers a write with
// FAILED_PRECONDITION and the leader's address (the "rolis-leader" trailer),
// the client reconnects there and sends the call again, for a bounded number
// of hops. Three ways to run transactions:
//
//   - one-shot: Get, Put, Delete, Scan and Execute run a whole transaction
//     in one round trip; Execute takes a list of operations including
//     conditional writes (PutIf);
//   - interactive: Txn runs a function against a transaction (Begin, reads
//     and writes, Commit) and runs it again after a conflict (ErrAborted),
//     with jittered exponential backoff, bounded attempts and a retry budget;
//   - pipelined: a Pipeline keeps many one-shot transactions in flight on
//     one bidirectional stream (ExecuteStream), for throughput.
//
// Every call takes a context; errors match the sentinel errors of this
// package with errors.Is (ErrAborted, ErrNotLeader, ErrConditionFailed...).
//
// A transaction is acknowledged by the server only once it is on a majority
// of replicas, so an acknowledged write survives any failover.
package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
)

// Client is safe for concurrent use. Close it when done.
type Client struct {
	cfg      Config
	retry    RetryPolicy
	dialOpts []grpc.DialOption

	mu     sync.Mutex
	conns  map[string]*endpoint
	closed bool

	target atomic.Pointer[endpoint] // where calls go now
	rot    atomic.Uint32            // rotation among cfg.Endpoints
}

// endpoint is one server address and its connections.
type endpoint struct {
	addr  string
	ccs   []*grpc.ClientConn
	rolis []rolisv1.RolisClient
	admin []rolisv1.AdminClient
	rr    atomic.Uint32
}

func (e *endpoint) pick() int {
	if len(e.ccs) == 1 {
		return 0
	}
	return int(e.rr.Add(1) % uint32(len(e.ccs)))
}

// New returns a client of the servers at cfg.Endpoints. It connects lazily
// unless cfg.DialTimeout > 0.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("rolis: no endpoint")
	}
	for i, e := range cfg.Endpoints {
		if cleanAddr(e) == "" {
			return nil, fmt.Errorf("rolis: endpoint %q is not host:port", e)
		}
		cfg.Endpoints[i] = cleanAddr(e)
	}
	switch {
	case cfg.MaxRedirects == 0:
		cfg.MaxRedirects = 3
	case cfg.MaxRedirects < 0:
		cfg.MaxRedirects = 0 // stay on the endpoint: a not-leader reply is the answer
	}
	if cfg.ConnsPerEndpoint <= 0 {
		cfg.ConnsPerEndpoint = 1
	}
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = 64 << 20
	}
	retry := cfg.Retry
	if retry == (RetryPolicy{}) {
		retry = DefaultRetryPolicy()
	}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	c := &Client{
		cfg:   cfg,
		retry: retry,
		conns: map[string]*endpoint{},
		dialOpts: []grpc.DialOption{
			grpc.WithTransportCredentials(creds),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxMessageSize), grpc.MaxCallSendMsgSize(cfg.MaxMessageSize)),
			// Larger windows than the defaults keep a pipelined stream busy.
			grpc.WithInitialWindowSize(4 << 20),
			grpc.WithInitialConnWindowSize(16 << 20),
			grpc.WithConnectParams(reconnectParams),
		},
	}
	if cfg.KeepaliveTime > 0 {
		c.dialOpts = append(c.dialOpts, grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: cfg.KeepaliveTime, Timeout: cfg.KeepaliveTime}))
	}
	ep, err := c.endpoint(cfg.Endpoints[0])
	if err != nil {
		return nil, err
	}
	c.target.Store(ep)
	if cfg.DialTimeout > 0 {
		dctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
		defer cancel()
		if err := waitReady(dctx, ep.ccs[0]); err != nil {
			c.Close()
			return nil, fmt.Errorf("rolis: connecting to %s: %w", ep.addr, err)
		}
	}
	return c, nil
}

// reconnectParams: after a failed connection attempt gRPC waits before the
// next one, and calls fail at once (UNAVAILABLE) until then. Its default
// (1 s, growing by 1.6 up to 2 minutes) kept a client that reaches the
// leader through a Service failing for 5-15 s after a failover had long
// moved the Service to the new leader. A connection is one address, so
// retrying it every 100 ms at first and at most every second is cheap.
var reconnectParams = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 5 * time.Second,
}

func waitReady(ctx context.Context, cc *grpc.ClientConn) error {
	cc.Connect()
	for {
		s := cc.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !cc.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}

// endpoint returns the connections to addr, dialing them if needed.
func (c *Client) endpoint(addr string) (*endpoint, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if ep, ok := c.conns[addr]; ok {
		return ep, nil
	}
	ep := &endpoint{addr: addr}
	for range c.cfg.ConnsPerEndpoint {
		// Each ClientConn has its own HTTP/2 connection.
		cc, err := grpc.NewClient("passthrough:///"+addr, c.dialOpts...)
		if err != nil {
			for _, cc := range ep.ccs {
				cc.Close()
			}
			return nil, fmt.Errorf("rolis: dialing %s: %w", addr, err)
		}
		ep.ccs = append(ep.ccs, cc)
		ep.rolis = append(ep.rolis, rolisv1.NewRolisClient(cc))
		ep.admin = append(ep.admin, rolisv1.NewAdminClient(cc))
	}
	c.conns[addr] = ep
	return ep, nil
}

// Close closes every connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for _, ep := range c.conns {
		for _, cc := range ep.ccs {
			errs = append(errs, cc.Close())
		}
	}
	return errors.Join(errs...)
}

// Target returns the address calls go to now (the leader, once a redirect
// named it).
func (c *Client) Target() string { return c.target.Load().addr }

// SetTarget sends the next calls to addr.
func (c *Client) SetTarget(addr string) error {
	a := cleanAddr(addr)
	if a == "" {
		return fmt.Errorf("rolis: %q is not host:port", addr)
	}
	ep, err := c.endpoint(a)
	if err != nil {
		return err
	}
	c.target.Store(ep)
	return nil
}

// reroute moves the target after err and reports whether the call may be
// sent again: to the leader named by a not-leader reply, or else to the next
// configured endpoint (after a not-leader reply without an address, a
// failed dial, or any unavailability of an idempotent call).
func (c *Client) reroute(from *endpoint, err error, idempotent bool) bool {
	if errors.Is(err, ErrNotLeader) {
		if l := LeaderOf(err); l != "" {
			if l == from.addr {
				return false // the server names itself: do not loop
			}
			return c.SetTarget(l) == nil
		}
		return c.rotate(from)
	}
	if notSent(err) || (idempotent && errors.Is(err, ErrUnavailable)) {
		return c.rotate(from)
	}
	return false
}

func (c *Client) rotate(from *endpoint) bool {
	n := len(c.cfg.Endpoints)
	if n < 2 {
		return false
	}
	for i := 0; i < n; i++ {
		addr := c.cfg.Endpoints[int(c.rot.Add(1))%n]
		if addr == from.addr {
			continue
		}
		ep, err := c.endpoint(addr)
		if err != nil {
			return false
		}
		c.target.CompareAndSwap(from, ep)
		return true
	}
	return false
}

// route runs call against the target, following redirects.
func (c *Client) route(ctx context.Context, idempotent bool, call func(ep *endpoint) error) error {
	var err error
	for hop := 0; ; hop++ {
		ep := c.target.Load()
		err = call(ep)
		if err == nil {
			return nil
		}
		// The target did not answer in time: a paused or cut-off member
		// keeps its connection open, so without this every later call
		// would wait on it too. The next call starts at another endpoint
		// (which redirects to the leader); this one is not sent again, its
		// outcome is unknown. The server's DEADLINE_EXCEEDED counts too: it
		// gets the caller's deadline and may report it before the caller's
		// own timer fires.
		if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			c.rotate(ep)
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		if hop >= c.cfg.MaxRedirects {
			if errors.Is(err, ErrNotLeader) {
				return fmt.Errorf("%w (%d hops): %w", ErrTooManyRedirects, hop, err)
			}
			return err
		}
		if !c.reroute(ep, err, idempotent) {
			return err
		}
	}
}

// Execute runs ops as one transaction in one round trip, on the leader. It
// runs it again after ErrAborted according to Config.Retry (the server also
// retries Config.ServerRetries times by itself). When a PutIf does not
// match, nothing is written and it returns a Result with ConditionFailed
// set, no op results (the reads were not validated) and ErrConditionFailed.
func (c *Client) Execute(ctx context.Context, ops ...Op) (*Result, error) {
	req := &rolisv1.ExecuteRequest{Ops: make([]*rolisv1.Op, len(ops)), MaxRetries: c.cfg.ServerRetries}
	for i := range ops {
		req.Ops[i] = ops[i].proto()
	}
	var res *Result
	ro := IsReadOnly(ops)
	err := runWithRetry(ctx, c.retry, func(int) error {
		return c.route(ctx, ro, func(ep *endpoint) error {
			var tr metadata.MD
			r, err := ep.rolis[ep.pick()].Execute(ctx, req, grpc.Trailer(&tr))
			if err != nil {
				return wrapErr("Execute", err, tr)
			}
			if r.GetErrorCode() != 0 {
				return newError("Execute", codeOf(r.GetErrorCode()), r.GetErrorMessage(), tr)
			}
			res = resultFromProto(r)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if res.ConditionFailed {
		return res, ErrConditionFailed
	}
	return res, nil
}

// Table returns a view of the client whose helpers address table.
func (c *Client) Table(name string) *Table { return &Table{c: c, name: name} }

// Get reads key from the default table in a one-shot transaction.
func (c *Client) Get(ctx context.Context, key []byte) (value []byte, found bool, err error) {
	return c.Table("").Get(ctx, key)
}

// Put writes key = value in the default table.
func (c *Client) Put(ctx context.Context, key, value []byte) error {
	return c.Table("").Put(ctx, key, value)
}

// Delete removes key from the default table and reports whether it existed.
func (c *Client) Delete(ctx context.Context, key []byte) (found bool, err error) {
	return c.Table("").Delete(ctx, key)
}

// Scan returns up to limit items of [start, end) of the default table in
// key order (limit 0 = the server's default; nil end = unbounded).
func (c *Client) Scan(ctx context.Context, start, end []byte, limit uint32) ([]KV, error) {
	return c.Table("").Scan(ctx, start, end, limit)
}

// Table addresses the one-shot helpers to one table.
type Table struct {
	c    *Client
	name string
}

// Get reads key.
func (t *Table) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	r, err := t.c.Execute(ctx, Get(key).In(t.name))
	if err != nil {
		return nil, false, err
	}
	if len(r.Results) != 1 {
		return nil, false, fmt.Errorf("rolis: Execute returned %d results for 1 op", len(r.Results))
	}
	return r.Results[0].Value, r.Results[0].Found, nil
}

// Put writes key = value.
func (t *Table) Put(ctx context.Context, key, value []byte) error {
	_, err := t.c.Execute(ctx, Put(key, value).In(t.name))
	return err
}

// Delete removes key and reports whether it existed.
func (t *Table) Delete(ctx context.Context, key []byte) (bool, error) {
	r, err := t.c.Execute(ctx, Delete(key).In(t.name))
	if err != nil {
		return false, err
	}
	return len(r.Results) == 1 && r.Results[0].Found, nil
}

// Scan returns up to limit items of [start, end).
func (t *Table) Scan(ctx context.Context, start, end []byte, limit uint32) ([]KV, error) {
	r, err := t.c.Execute(ctx, Scan(start, end, limit).In(t.name))
	if err != nil {
		return nil, err
	}
	if len(r.Results) != 1 {
		return nil, fmt.Errorf("rolis: Execute returned %d results for 1 op", len(r.Results))
	}
	return r.Results[0].Items, nil
}

// withTimeout is a helper for callers without a deadline.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
