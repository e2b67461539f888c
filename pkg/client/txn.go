package client

import (
	"context"
	"errors"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// TxnOption configures an interactive transaction.
type TxnOption func(*rolisv1.BeginRequest)

// ReadOnly begins a read-only transaction: it reads a consistent snapshot,
// never aborts, and may be served by a follower.
func ReadOnly() TxnOption { return func(r *rolisv1.BeginRequest) { r.ReadOnly = true } }

// IdleTimeout sets how long the server keeps the transaction open between
// two calls before it aborts it and frees its resources (0 = the server's
// default). Calls after that fail with ErrTxnNotFound.
func IdleTimeout(d time.Duration) TxnOption {
	return func(r *rolisv1.BeginRequest) { r.IdleTimeoutMs = uint32(d.Milliseconds()) }
}

// CommitInfo is the replication key (epoch, commit timestamp) of a
// committed transaction.
type CommitInfo struct {
	Epoch, CommitTS uint64
}

// Tx is an interactive transaction on one server. It is not safe for
// concurrent use. Finish it with Commit or Rollback.
type Tx struct {
	*txState        // shared by the table views of one transaction
	table    string // "" = DefaultTable
}

type txState struct {
	c        *Client
	ep       *endpoint
	id       uint64
	readOnly bool
	done     bool
}

// Begin starts an interactive transaction on the current target. Prefer Txn,
// which also retries conflicts.
func (c *Client) Begin(ctx context.Context, opts ...TxnOption) (*Tx, error) {
	req := &rolisv1.BeginRequest{}
	for _, o := range opts {
		o(req)
	}
	var tx *Tx
	err := c.route(ctx, true, func(ep *endpoint) error {
		var tr metadata.MD
		r, err := ep.rolis[ep.pick()].Begin(ctx, req, grpc.Trailer(&tr))
		if err != nil {
			return wrapErr("Begin", err, tr)
		}
		tx = &Tx{txState: &txState{c: c, ep: ep, id: r.GetTxnId(), readOnly: req.ReadOnly}}
		return nil
	})
	return tx, err
}

// Txn runs fn in an interactive transaction and commits it. When fn or the
// commit fails with ErrAborted (a conflict) or ErrNotLeader (a redirect), or
// Begin finds no room (ErrResourceExhausted: too many open transactions), the
// transaction is rolled back and fn runs again in a new one, according to
// Config.Retry; so fn must have no effect outside the transaction, or
// tolerate running more than once. Any other error from fn rolls back and is
// returned as is.
func (c *Client) Txn(ctx context.Context, fn func(tx *Tx) error, opts ...TxnOption) error {
	_, err := c.TxnCommit(ctx, fn, opts...)
	return err
}

// TxnCommit is Txn that also returns the commit key.
func (c *Client) TxnCommit(ctx context.Context, fn func(tx *Tx) error, opts ...TxnOption) (CommitInfo, error) {
	var info CommitInfo
	err := runWithRetry(ctx, c.retry, func(int) error {
		tx, err := c.Begin(ctx, opts...)
		if errors.Is(err, ErrResourceExhausted) {
			return retryAnyway{err} // too many open transactions: wait for room
		}
		if err != nil {
			return err
		}
		if err = fn(tx); err == nil {
			info, err = tx.Commit(ctx)
		}
		if err != nil {
			tx.rollbackQuietly()
			if errors.Is(err, ErrNotLeader) {
				c.reroute(tx.ep, err, false)
			}
		}
		return err
	})
	return info, err
}

// ID returns the server's transaction id.
func (tx *Tx) ID() uint64 { return tx.id }

// Endpoint returns the address of the server that holds the transaction.
func (tx *Tx) Endpoint() string { return tx.ep.addr }

// Table returns a view of tx whose operations address table.
func (tx *Tx) Table(name string) *Tx {
	return &Tx{txState: tx.txState, table: name}
}

func (tx *Tx) rpc() rolisv1.RolisClient { return tx.ep.rolis[tx.ep.pick()] }

// fail records that the server dropped the transaction after err.
func (tx *Tx) fail(op string, err error, tr metadata.MD) error {
	e := wrapErr(op, err, tr)
	if errors.Is(e, ErrAborted) || errors.Is(e, ErrTxnNotFound) {
		tx.done = true
	}
	return e
}

// Get reads key.
func (tx *Tx) Get(ctx context.Context, key []byte) (value []byte, found bool, err error) {
	if tx.done {
		return nil, false, ErrTxnDone
	}
	var tr metadata.MD
	r, err := tx.rpc().Get(ctx, &rolisv1.GetRequest{TxnId: tx.id, Table: tx.table, Key: key}, grpc.Trailer(&tr))
	if err != nil {
		return nil, false, tx.fail("Get", err, tr)
	}
	return r.GetValue(), r.GetFound(), nil
}

// Scan reads up to limit items of [start, end) (limit 0 = server default, nil
// end = unbounded); more reports that the limit cut the scan short.
func (tx *Tx) Scan(ctx context.Context, start, end []byte, limit uint32) (items []KV, more bool, err error) {
	if tx.done {
		return nil, false, ErrTxnDone
	}
	var tr metadata.MD
	r, err := tx.rpc().Scan(ctx, &rolisv1.ScanRequest{TxnId: tx.id, Table: tx.table, StartKey: start, EndKey: end, Limit: limit}, grpc.Trailer(&tr))
	if err != nil {
		return nil, false, tx.fail("Scan", err, tr)
	}
	return kvsFromProto(r.GetItems()), r.GetMore(), nil
}

// Put writes key = value (visible to this transaction at once, to others
// once committed).
func (tx *Tx) Put(ctx context.Context, key, value []byte) error {
	if tx.done {
		return ErrTxnDone
	}
	var tr metadata.MD
	_, err := tx.rpc().Put(ctx, &rolisv1.PutRequest{TxnId: tx.id, Table: tx.table, Key: key, Value: value}, grpc.Trailer(&tr))
	if err != nil {
		return tx.fail("Put", err, tr)
	}
	return nil
}

// Delete removes key and reports whether it existed.
func (tx *Tx) Delete(ctx context.Context, key []byte) (bool, error) {
	if tx.done {
		return false, ErrTxnDone
	}
	var tr metadata.MD
	r, err := tx.rpc().Delete(ctx, &rolisv1.DeleteRequest{TxnId: tx.id, Table: tx.table, Key: key}, grpc.Trailer(&tr))
	if err != nil {
		return false, tx.fail("Delete", err, tr)
	}
	return r.GetFound(), nil
}

// Commit commits the transaction. It returns once the transaction is on a
// majority of replicas. ErrAborted means a conflict: nothing was applied.
func (tx *Tx) Commit(ctx context.Context) (CommitInfo, error) {
	if tx.done {
		return CommitInfo{}, ErrTxnDone
	}
	var tr metadata.MD
	r, err := tx.rpc().Commit(ctx, &rolisv1.CommitRequest{TxnId: tx.id}, grpc.Trailer(&tr))
	if err != nil {
		e := tx.fail("Commit", err, tr)
		if errors.Is(e, ErrNotLeader) {
			return CommitInfo{}, e // still open on the server: Rollback it
		}
		tx.done = true
		return CommitInfo{}, e
	}
	tx.done = true
	return CommitInfo{Epoch: r.GetEpoch(), CommitTS: r.GetCommitTs()}, nil
}

// Rollback aborts the transaction. Rolling back a finished transaction
// returns ErrTxnDone.
func (tx *Tx) Rollback(ctx context.Context) error {
	if tx.done {
		return ErrTxnDone
	}
	tx.done = true
	var tr metadata.MD
	if _, err := tx.rpc().Abort(ctx, &rolisv1.AbortRequest{TxnId: tx.id}, grpc.Trailer(&tr)); err != nil {
		return wrapErr("Abort", err, tr)
	}
	return nil
}

// rollbackQuietly frees the server's transaction, ignoring the outcome (the
// server's idle timeout frees it anyway).
func (tx *Tx) rollbackQuietly() {
	if tx.done {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = tx.Rollback(ctx)
}
