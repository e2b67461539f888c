package client

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// CallResult is the outcome of a procedure call.
type CallResult struct {
	// Output is the procedure's results (docs/client.md, "Procedures"): for
	// a workload transaction [committed (0: rolled back by the application),
	// conflict aborts the server retried]; for .setup [load parts]; for
	// .load [rows]; for bank.audit [the total].
	Output []int64
	// Epoch and CommitTS form the replication key of a read-write
	// transaction (CommitTS 0 for the others).
	Epoch, CommitTS uint64
}

// ProcedureRequest is the wire request of a procedure call, for pipelines
// (Pipeline.ExecuteRequestAsync, BatchPipeline.ExecuteBatchAsync).
func ProcedureRequest(procedure string, args ...uint64) *rolisv1.ExecuteRequest {
	return &rolisv1.ExecuteRequest{Procedure: procedure, Args: args}
}

// Call runs a named server-side procedure (docs/client.md, "Procedures") in
// one round trip, on the leader. The server retries its conflicts itself;
// Call runs it again after ErrAborted according to Config.Retry. An unknown
// procedure or bad args: ErrInvalidArgument, and nothing changed.
func (c *Client) Call(ctx context.Context, procedure string, args ...uint64) (*CallResult, error) {
	req := ProcedureRequest(procedure, args...)
	var res *CallResult
	err := runWithRetry(ctx, c.retry, func(int) error {
		return c.route(ctx, false, func(ep *endpoint) error {
			var tr metadata.MD
			r, err := ep.rolis[ep.pick()].Execute(ctx, req, grpc.Trailer(&tr))
			if err != nil {
				return wrapErr("Execute", err, tr)
			}
			if r.GetErrorCode() != 0 {
				return newError("Execute", codeOf(r.GetErrorCode()), r.GetErrorMessage(), tr)
			}
			res = &CallResult{Output: r.GetOutput(), Epoch: r.GetEpoch(), CommitTS: r.GetCommitTs()}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
