package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
)

// rawRolis is the generated client on its own connection, for requests the
// Go client would not send.
func rawRolis(t testing.TB, addr string) (rolisv1.RolisClient, *grpc.ClientConn) {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return rolisv1.NewRolisClient(cc), cc
}

// badInputFixture starts a server holding known data and checks, after
// each case, that the server still serves and the data did not change.
type badInputFixture struct {
	t      *testing.T
	m      *testserver.Member
	cl     *client.Client
	raw    rolisv1.RolisClient
	cc     *grpc.ClientConn
	before string
}

func newBadInputFixture(t *testing.T, args ...string) *badInputFixture {
	m, cl := standalone(t, append([]string{"--tables=orders"}, args...)...)
	raw, cc := rawRolis(t, m.ClientAddr)
	for i := 0; i < 20; i++ {
		mustPut(t, cl, fmt.Sprintf("keep%02d", i), fmt.Sprintf("value%02d", i))
	}
	return &badInputFixture{t: t, m: m, cl: cl, raw: raw, cc: cc, before: dump(t, cl, "")}
}

// check runs one bad request, wants code, then checks that the process is
// alive, serves, and holds the same data.
func (f *badInputFixture) check(name string, want codes.Code, bad func(ctx context.Context) error) {
	f.t.Run(name, func(t *testing.T) {
		ctx := ctxFor(t, 20*time.Second)
		wantCode(t, name, bad(ctx), want)
		if !f.m.Running() {
			t.Fatalf("rolisd exited after %s", name)
		}
		if after := dump(t, f.cl, ""); after != f.before {
			t.Fatalf("data changed after %s:\nbefore:\n%s\nafter:\n%s", name, f.before, after)
		}
		if v, ok := mustGet(t, f.cl, "keep07"); !ok || v != "value07" {
			t.Fatalf("server does not serve after %s: %q %v", name, v, ok)
		}
	})
}

func TestBadInputGetsTheRightCodeAndChangesNothing(t *testing.T) {
	f := newBadInputFixture(t, "--max-ops-per-txn=100", "--max-key-bytes=64", "--max-value-bytes=1KiB")
	cl, raw := f.cl, f.raw
	bigKey := []byte(strings.Repeat("k", 65))
	bigValue := []byte(strings.Repeat("v", 1025))
	okKey := []byte("keep03")

	// Limits of keys and values, one-shot and interactive.
	f.check("oversized key in Execute put", codes.InvalidArgument, func(ctx context.Context) error {
		_, err := cl.Execute(ctx, client.Put(okKey, []byte("x")), client.Put(bigKey, []byte("x")))
		return err
	})
	f.check("oversized key in Execute get", codes.InvalidArgument, func(ctx context.Context) error {
		_, err := cl.Execute(ctx, client.Get(bigKey))
		return err
	})
	f.check("oversized value in Execute", codes.InvalidArgument, func(ctx context.Context) error {
		_, err := cl.Execute(ctx, client.Put(okKey, bigValue))
		return err
	})
	f.check("oversized value in PutIf", codes.InvalidArgument, func(ctx context.Context) error {
		_, err := cl.Execute(ctx, client.PutIf(okKey, bigValue, []byte("value03")))
		return err
	})
	f.check("empty key in Execute put", codes.InvalidArgument, func(ctx context.Context) error {
		_, err := cl.Execute(ctx, client.Put(okKey, []byte("x")), client.Put(nil, []byte("x")))
		return err
	})
	f.check("empty key in Execute delete", codes.InvalidArgument, func(ctx context.Context) error {
		_, err := cl.Execute(ctx, client.Delete(nil))
		return err
	})
	f.check("oversized key in interactive put", codes.InvalidArgument, func(ctx context.Context) error {
		return interactive(ctx, cl, func(tx *client.Tx) error { return tx.Put(ctx, bigKey, []byte("x")) })
	})
	f.check("oversized value in interactive put", codes.InvalidArgument, func(ctx context.Context) error {
		return interactive(ctx, cl, func(tx *client.Tx) error { return tx.Put(ctx, okKey, bigValue) })
	})
	f.check("empty key in interactive get", codes.InvalidArgument, func(ctx context.Context) error {
		return interactive(ctx, cl, func(tx *client.Tx) error { _, _, err := tx.Get(ctx, nil); return err })
	})
	f.check("oversized scan bound", codes.InvalidArgument, func(ctx context.Context) error {
		_, err := cl.Scan(ctx, bigKey, nil, 10)
		return err
	})

	// Too many operations.
	f.check("too many ops in Execute", codes.InvalidArgument, func(ctx context.Context) error {
		ops := make([]client.Op, 101)
		for i := range ops {
			ops[i] = client.Put([]byte(fmt.Sprintf("many%03d", i)), []byte("x"))
		}
		_, err := cl.Execute(ctx, ops...)
		return err
	})
	f.check("too many ops in an interactive transaction", codes.ResourceExhausted, func(ctx context.Context) error {
		return interactive(ctx, cl, func(tx *client.Tx) error {
			for i := 0; i < 101; i++ {
				if err := tx.Put(ctx, []byte(fmt.Sprintf("many%03d", i)), []byte("x")); err != nil {
					return err
				}
			}
			return nil
		})
	})

	// Unknown table.
	f.check("unknown table in Execute", codes.InvalidArgument, func(ctx context.Context) error {
		_, err := cl.Execute(ctx, client.Put(okKey, []byte("x")), client.Put(okKey, []byte("x")).In("nosuchtable"))
		return err
	})
	f.check("unknown table in interactive put", codes.InvalidArgument, func(ctx context.Context) error {
		return interactive(ctx, cl, func(tx *client.Tx) error { return tx.Table("nosuchtable").Put(ctx, okKey, []byte("x")) })
	})

	// Unknown transaction ids.
	const noTxn = 0x7fffffff12345
	f.check("unknown txn id in Get", codes.NotFound, func(ctx context.Context) error {
		_, err := raw.Get(ctx, &rolisv1.GetRequest{TxnId: noTxn, Key: okKey})
		return err
	})
	f.check("unknown txn id in Put", codes.NotFound, func(ctx context.Context) error {
		_, err := raw.Put(ctx, &rolisv1.PutRequest{TxnId: noTxn, Key: okKey, Value: []byte("x")})
		return err
	})
	f.check("unknown txn id in Commit", codes.NotFound, func(ctx context.Context) error {
		_, err := raw.Commit(ctx, &rolisv1.CommitRequest{TxnId: noTxn})
		return err
	})
	f.check("txn id 0 in Put", codes.NotFound, func(ctx context.Context) error {
		_, err := raw.Put(ctx, &rolisv1.PutRequest{Key: okKey, Value: []byte("x")})
		return err
	})
	f.check("committed txn id reused", codes.NotFound, func(ctx context.Context) error {
		b, err := raw.Begin(ctx, &rolisv1.BeginRequest{})
		if err != nil {
			return err
		}
		if _, err := raw.Commit(ctx, &rolisv1.CommitRequest{TxnId: b.TxnId}); err != nil {
			return err
		}
		_, err = raw.Put(ctx, &rolisv1.PutRequest{TxnId: b.TxnId, Key: okKey, Value: []byte("x")})
		return err
	})

	// Malformed requests.
	f.check("op kind unset", codes.InvalidArgument, func(ctx context.Context) error {
		_, err := raw.Execute(ctx, &rolisv1.ExecuteRequest{Ops: []*rolisv1.Op{{Key: okKey, Value: []byte("x")}}})
		return err
	})
	f.check("op kind out of range", codes.InvalidArgument, func(ctx context.Context) error {
		_, err := raw.Execute(ctx, &rolisv1.ExecuteRequest{Ops: []*rolisv1.Op{
			{Kind: rolisv1.Op_PUT, Key: okKey, Value: []byte("x")}, {Kind: 99, Key: okKey}}})
		return err
	})
	f.check("malformed op in ExecuteStream", codes.InvalidArgument, func(ctx context.Context) error {
		s, err := raw.ExecuteStream(ctx)
		if err != nil {
			return err
		}
		if err := s.Send(&rolisv1.ExecuteRequest{Seq: 7, Ops: []*rolisv1.Op{{Kind: rolisv1.Op_PUT, Key: nil}}}); err != nil {
			return err
		}
		r, err := s.Recv()
		if err != nil {
			return err
		}
		s.CloseSend()
		if r.Seq != 7 {
			return fmt.Errorf("seq %d", r.Seq)
		}
		return status.Error(codes.Code(r.ErrorCode), r.ErrorMessage)
	})
}

// interactive runs fn in a transaction without retries and rolls it back
// on error.
func interactive(ctx context.Context, cl *client.Client, fn func(*client.Tx) error) error {
	tx, err := cl.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback(ctx)
		return err
	}
	_, err = tx.Commit(ctx)
	return err
}

// rawBytes is a codec that sends the bytes it is given as the message.
type rawBytes struct{}

func (rawBytes) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawBytes) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawBytes) Name() string { return "proto" }

var _ encoding.Codec = rawBytes{}

// Bytes that are not a protobuf message. The unary client methods decode
// their requests themselves (gRPC C++'s typed handlers would answer
// UNIMPLEMENTED with an empty message): INVALID_ARGUMENT that names the
// message, and the server stays up with its data unchanged.
func TestUndecodableRequestIsInvalidArgumentAndServerKeepsServing(t *testing.T) {
	f := newBadInputFixture(t)
	garbage := [][]byte{
		{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f},       // field 1, length far past the end
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // invalid varint tag
		{0x0a, 0x05, 0x08},                         // truncated embedded Op
	}
	methods := []string{"Begin", "Get", "Scan", "Put", "Delete", "Commit", "Abort", "Execute"}
	for i, g := range garbage {
		for _, method := range methods {
			// Every case is cut short whatever the message (a wire type that
			// does not match a field is skipped as unknown, and its length
			// still runs past the end).
			f.check(fmt.Sprintf("garbage %d to %s", i, method), codes.InvalidArgument, func(ctx context.Context) error {
				var out []byte
				in := g
				err := f.cc.Invoke(ctx, "/rolis.v1.Rolis/"+method, &in, &out, grpc.ForceCodec(rawBytes{}))
				if err != nil && !strings.Contains(status.Convert(err).Message(), "malformed request") {
					t.Errorf("garbage %d to %s: message does not say malformed: %v", i, method, err)
				}
				return err
			})
		}
	}
}

func TestTooManyOpenTransactionsIsResourceExhaustedAndFreedOnRollback(t *testing.T) {
	_, cl := standalone(t, "--max-open-txns=3", "--worker-threads=4")
	ctx := ctxFor(t, 20*time.Second)
	var txs []*client.Tx
	for i := 0; i < 3; i++ {
		tx, err := cl.Begin(ctx)
		if err != nil {
			t.Fatalf("begin %d: %v", i, err)
		}
		txs = append(txs, tx)
	}
	_, err := cl.Begin(ctx)
	wantCode(t, "4th Begin", err, codes.ResourceExhausted)
	mustPut(t, cl, "still", "serving") // one-shots still run
	txs[0].Rollback(ctx)
	tx, err := cl.Begin(ctx)
	if err != nil {
		t.Fatalf("begin after a rollback freed a place: %v", err)
	}
	tx.Rollback(ctx)
	for _, tx := range txs[1:] {
		tx.Rollback(ctx)
	}
}

func TestMessageLargerThanTheServerLimitIsRefused(t *testing.T) {
	f := newBadInputFixture(t, "--max-message-bytes=256KiB")
	f.check("5 MiB Execute", codes.ResourceExhausted, func(ctx context.Context) error {
		_, err := f.raw.Execute(ctx, &rolisv1.ExecuteRequest{Ops: []*rolisv1.Op{
			{Kind: rolisv1.Op_PUT, Key: []byte("keep01"), Value: make([]byte, 5<<20)}}})
		return err
	})
}
