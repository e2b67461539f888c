package client

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestErrorMatchesSentinelsByCode(t *testing.T) {
	cases := []struct {
		code codes.Code
		want error
	}{
		{codes.Aborted, ErrAborted},
		{codes.FailedPrecondition, ErrFailedPrecondition},
		{codes.NotFound, ErrTxnNotFound},
		{codes.InvalidArgument, ErrInvalidArgument},
		{codes.ResourceExhausted, ErrResourceExhausted},
		{codes.Unavailable, ErrUnavailable},
		{codes.Unauthenticated, ErrUnauthenticated},
		{codes.DeadlineExceeded, context.DeadlineExceeded},
		{codes.Canceled, context.Canceled},
	}
	all := []error{ErrAborted, ErrNotLeader, ErrFailedPrecondition, ErrTxnNotFound, ErrInvalidArgument, ErrResourceExhausted,
		ErrUnavailable, ErrUnauthenticated, ErrConditionFailed}
	for _, c := range cases {
		err := fmt.Errorf("wrapped: %w", wrapErr("Execute", status.Error(c.code, "x"), nil))
		if !errors.Is(err, c.want) {
			t.Errorf("%v: errors.Is(%v) = false", c.code, c.want)
		}
		for _, other := range all {
			if other != c.want && errors.Is(err, other) {
				t.Errorf("%v also matches %v", c.code, other)
			}
		}
		if got := status.Code(err); got != c.code {
			t.Errorf("status.Code = %v, want %v", got, c.code)
		}
		if got := Code(err); got != c.code {
			t.Errorf("Code = %v, want %v", got, c.code)
		}
	}
}

func TestNotLeaderErrorCarriesLeader(t *testing.T) {
	err := wrapErr("Put", status.Error(codes.FailedPrecondition, "not the leader"),
		metadata.Pairs(LeaderTrailer, "127.0.0.1:7000"))
	if !errors.Is(err, ErrNotLeader) || LeaderOf(err) != "127.0.0.1:7000" {
		t.Fatalf("err %v leader %q", err, LeaderOf(err))
	}
}

func TestFailedPreconditionIsNotLeaderOnlyWhenItSaysSo(t *testing.T) {
	ro := wrapErr("Put", status.Error(codes.FailedPrecondition, "transaction is read-only"), nil)
	if errors.Is(ro, ErrNotLeader) || !errors.Is(ro, ErrFailedPrecondition) {
		t.Errorf("read-only write: %v", ro)
	}
	nl := wrapErr("Put", status.Error(codes.FailedPrecondition, "not the leader: leader unknown"), nil)
	if !errors.Is(nl, ErrNotLeader) || !errors.Is(nl, ErrFailedPrecondition) {
		t.Errorf("not leader: %v", nl)
	}
}

func TestContextErrorsKeepTheirIdentity(t *testing.T) {
	if err := wrapErr("Get", context.Canceled, nil); err != context.Canceled {
		t.Fatalf("got %v", err)
	}
}

func TestNotSentOnlyForDialFailures(t *testing.T) {
	dial := wrapErr("Execute", status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), nil)
	if !notSent(dial) {
		t.Error("dial failure not recognised")
	}
	for _, msg := range []string{"no leader is open for writes (this member is candidate)", "server is shutting down"} {
		if !notSent(wrapErr("Execute", status.Error(codes.Unavailable, msg), nil)) {
			t.Errorf("%q: the server refused before running it", msg)
		}
	}
	lost := wrapErr("Execute", status.Error(codes.Unavailable, "error reading from server: EOF"), nil)
	if notSent(lost) {
		t.Error("a lost connection may have delivered the request: must not count as not sent")
	}
}
