package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Sentinel errors. Every error the client returns for a server reply is an
// *Error, which matches one of these with errors.Is:
//
//	if errors.Is(err, client.ErrAborted) { ... }
var (
	// ErrAborted: an optimistic-concurrency conflict (gRPC ABORTED). Nothing
	// of the transaction was applied; running it again is safe.
	ErrAborted = errors.New("rolis: transaction aborted by a conflict")
	// ErrNotLeader: a write reached a replica that is not the leader (gRPC
	// FAILED_PRECONDITION). Nothing was applied. The *Error carries the
	// leader's client address when the replica knows it.
	ErrNotLeader = errors.New("rolis: not the leader")
	// ErrFailedPrecondition: gRPC FAILED_PRECONDITION of any kind: a write
	// on a follower (also ErrNotLeader) or, for example, a write in a
	// read-only transaction (not ErrNotLeader).
	ErrFailedPrecondition = errors.New("rolis: failed precondition")
	// ErrConditionFailed: a PUT_IF of a one-shot transaction did not match;
	// the transaction wrote nothing.
	ErrConditionFailed = errors.New("rolis: condition failed")
	// ErrTxnNotFound: unknown or expired transaction id (gRPC NOT_FOUND), for
	// example after the server's idle timeout aborted it.
	ErrTxnNotFound = errors.New("rolis: transaction not found or expired")
	// ErrInvalidArgument: malformed or oversized key or value, unknown table,
	// too many operations (gRPC INVALID_ARGUMENT). Not retryable.
	ErrInvalidArgument = errors.New("rolis: invalid argument")
	// ErrResourceExhausted: a server limit such as the number of open
	// transactions (gRPC RESOURCE_EXHAUSTED).
	ErrResourceExhausted = errors.New("rolis: resource exhausted")
	// ErrUnavailable: the server could not be reached, or no leader is open
	// for writes (gRPC UNAVAILABLE). For a write this outcome is ambiguous
	// unless the request was never sent: it may or may not have committed.
	ErrUnavailable = errors.New("rolis: unavailable")
	// ErrUnauthenticated: TLS client authentication or permission failure
	// (gRPC UNAUTHENTICATED or PERMISSION_DENIED).
	ErrUnauthenticated = errors.New("rolis: unauthenticated")
	// ErrRetriesExhausted: the retry loop gave up (attempts or retry budget).
	// It is joined with the last error, so errors.Is(err, ErrAborted) also
	// holds when the last attempt aborted.
	ErrRetriesExhausted = errors.New("rolis: retries exhausted")
	// ErrTooManyRedirects: not-leader redirects exceeded Config.MaxRedirects.
	ErrTooManyRedirects = errors.New("rolis: too many not-leader redirects")
	// ErrTxnDone: the interactive transaction was already committed or
	// rolled back.
	ErrTxnDone = errors.New("rolis: transaction already finished")
	// ErrClosed: the client or pipeline was closed.
	ErrClosed = errors.New("rolis: closed")
)

// LeaderTrailer is the response trailer that names the leader's client
// address in a not-leader reply.
const LeaderTrailer = "rolis-leader"

// Error is a failed call to rolisd: its gRPC code and message, and for a
// not-leader reply, the leader's address if known.
type Error struct {
	Code    codes.Code
	Message string
	// Leader is the leader's client address (host:port) from the
	// "rolis-leader" trailer or the message; empty when unknown.
	Leader string
	// Op names the call that failed ("Execute", "Commit", ...).
	Op string
	// InDoubt: the call may have taken effect (a pipelined transaction whose
	// stream ended before its reply).
	InDoubt bool
}

func (e *Error) Error() string {
	s := fmt.Sprintf("rolis %s: %s: %s", e.Op, e.Code, e.Message)
	if e.Leader != "" && e.Code == codes.FailedPrecondition {
		s += " (leader " + e.Leader + ")"
	}
	return s
}

// Is maps the gRPC code to the sentinel errors of this package and to the
// context errors.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrAborted:
		return e.Code == codes.Aborted
	case ErrNotLeader:
		return e.isNotLeader()
	case ErrFailedPrecondition:
		return e.Code == codes.FailedPrecondition
	case ErrTxnNotFound:
		return e.Code == codes.NotFound
	case ErrInvalidArgument:
		return e.Code == codes.InvalidArgument || e.Code == codes.OutOfRange
	case ErrResourceExhausted:
		return e.Code == codes.ResourceExhausted
	case ErrUnavailable:
		return e.Code == codes.Unavailable
	case ErrUnauthenticated:
		return e.Code == codes.Unauthenticated || e.Code == codes.PermissionDenied
	case context.DeadlineExceeded:
		return e.Code == codes.DeadlineExceeded
	case context.Canceled:
		return e.Code == codes.Canceled
	}
	return false
}

// isNotLeader: FAILED_PRECONDITION that names a leader, or says "leader"
// (the server also uses the code for other preconditions, such as a write
// in a read-only transaction).
func (e *Error) isNotLeader() bool {
	return e.Code == codes.FailedPrecondition && (e.Leader != "" || strings.Contains(strings.ToLower(e.Message), "leader"))
}

// GRPCStatus lets status.FromError and status.Code see the original code.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// Code returns the gRPC code of err: codes.OK for nil, the code of an *Error
// or of a gRPC status error, codes.Unknown otherwise.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return status.Code(err)
}

// LeaderOf returns the leader address carried by a not-leader error, or "".
func LeaderOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Leader
	}
	return ""
}

// wrapErr turns a gRPC error into an *Error. trailer may be nil.
func wrapErr(op string, err error, trailer metadata.MD) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		// Context errors from the client side keep their identity.
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return &Error{Code: codes.Unknown, Message: err.Error(), Op: op}
	}
	return newError(op, st.Code(), st.Message(), trailer)
}

func newError(op string, code codes.Code, msg string, trailer metadata.MD) *Error {
	e := &Error{Code: code, Message: msg, Op: op}
	if code == codes.FailedPrecondition {
		e.Leader = leaderFrom(trailer, msg)
	}
	return e
}

// notSent reports whether err certainly left the transaction unapplied
// although its code is UNAVAILABLE: a dial failure (the request never left),
// or the server's own refusal before running it ("no leader is open for
// writes" during a failover, "server is shutting down"); so that even a write
// may be sent again. Any other UNAVAILABLE (a connection lost mid-call) is
// ambiguous for a write.
func notSent(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Code != codes.Unavailable || e.InDoubt {
		return false
	}
	return containsAny(e.Message, "while dialing", "connection refused", "no such host", "produced zero addresses",
		"no leader is open for writes", "server is shutting down")
}

// codeOf converts the error_code of an ExecuteResponse.
func codeOf(c int32) codes.Code {
	if c < 0 || c > int32(codes.Unauthenticated) {
		return codes.Unknown
	}
	return codes.Code(c)
}
