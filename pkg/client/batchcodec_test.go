package client

import (
	"math/rand"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

func randomBytes(r *rand.Rand, max int) []byte {
	if r.Intn(4) == 0 {
		return nil
	}
	b := make([]byte, r.Intn(max+1))
	r.Read(b)
	return b
}

func randomBatchResponse(r *rand.Rand, withScans bool) *rolisv1.ExecuteBatchResponse {
	m := &rolisv1.ExecuteBatchResponse{}
	for i := r.Intn(20); i > 0; i-- {
		resp := &rolisv1.ExecuteResponse{
			ConditionFailed: r.Intn(5) == 0,
			Epoch:           r.Uint64() >> r.Intn(64),
			CommitTs:        r.Uint64(),
			Seq:             uint64(r.Intn(1 << 20)),
		}
		if r.Intn(4) == 0 {
			resp.ErrorCode = int32(r.Intn(17)) - 1 // -1: a negative int32 on the wire
			resp.ErrorMessage = "transaction aborted: conflict on kv/k1"
		}
		for j := r.Intn(6); j > 0; j-- {
			res := &rolisv1.OpResult{Found: r.Intn(2) == 0, Value: randomBytes(r, 40)}
			if withScans && r.Intn(3) == 0 {
				res.Items = []*rolisv1.KeyValue{{Key: []byte("a"), Value: []byte("b")}}
			}
			resp.Results = append(resp.Results, res)
		}
		m.Responses = append(m.Responses, resp)
	}
	return m
}

// The codec decodes what the standard decoder decodes, with and without
// the fields it leaves to it (a scan's items).
func TestBatchCodecDecodesLikeTheStandardCodec(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	codec := newBatchCodec()
	for i := 0; i < 500; i++ {
		want := randomBatchResponse(r, i%2 == 1)
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got := &rolisv1.ExecuteBatchResponse{}
		if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(want, got) {
			t.Fatalf("case %d: decoded differently:\nwant %s\ngot  %s", i, prototext.Format(want), prototext.Format(got))
		}
	}
}

// Malformed bytes get the standard decoder's error, not a panic or a
// half-filled reply.
func TestBatchCodecRefusesMalformedReplies(t *testing.T) {
	good, err := proto.Marshal(randomBatchResponse(rand.New(rand.NewSource(2)), false))
	if err != nil {
		t.Fatal(err)
	}
	codec := newBatchCodec()
	for _, bad := range [][]byte{
		{0x0a, 0x05, 0x01},             // a response longer than the bytes
		{0x0a, 0x02, 0x0a, 0x7f},       // a result longer than its response
		{0x0a, 0x01, 0x28},             // a seq tag without its varint
		good[:len(good)-1],             // truncated
		{0x0a, 0x03, 0x30, 0xff, 0xff}, // an unterminated varint
	} {
		got := &rolisv1.ExecuteBatchResponse{}
		if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bad)}, got); err == nil {
			t.Errorf("% x: decoded without an error: %v", bad, got)
		}
	}
}

// A value does not share spare capacity with the next one: appending to it
// leaves the rest of the reply alone.
func TestBatchCodecValuesDoNotOverlap(t *testing.T) {
	want := &rolisv1.ExecuteBatchResponse{Responses: []*rolisv1.ExecuteResponse{{
		Results: []*rolisv1.OpResult{{Found: true, Value: []byte("aa")}, {Found: true, Value: []byte("bb")}},
	}}}
	b, _ := proto.Marshal(want)
	got := &rolisv1.ExecuteBatchResponse{}
	if err := newBatchCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got); err != nil {
		t.Fatal(err)
	}
	_ = append(got.Responses[0].Results[0].Value, 'X', 'X', 'X', 'X', 'X')
	if v := string(got.Responses[0].Results[1].Value); v != "bb" {
		t.Fatalf("second value changed to %q by an append to the first", v)
	}
}

// go test ./pkg/client -run '^$' -bench BatchReply -benchmem: a reply of 16
// YCSB++ responses (4 results of 8-byte values each, or none) decoded by
// the standard codec and by batchCodec.
func BenchmarkBatchReply(b *testing.B) {
	reply := &rolisv1.ExecuteBatchResponse{}
	for i := 0; i < 16; i++ {
		resp := &rolisv1.ExecuteResponse{Epoch: 1, CommitTs: uint64(1e12 + i), Seq: uint64(1000 + i)}
		for j := 0; j < 4; j++ {
			resp.Results = append(resp.Results, &rolisv1.OpResult{Found: true, Value: []byte("01234567")})
		}
		reply.Responses = append(reply.Responses, resp)
	}
	wire, err := proto.Marshal(reply)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		codec interface {
			Unmarshal(mem.BufferSlice, any) error
		}
	}{{"standard", newBatchCodec().std}, {"batchCodec", newBatchCodec()}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := c.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, &rolisv1.ExecuteBatchResponse{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func randomBatchRequest(r *rand.Rand) *rolisv1.ExecuteBatchRequest {
	m := &rolisv1.ExecuteBatchRequest{}
	for i := r.Intn(20); i > 0; i-- {
		req := &rolisv1.ExecuteRequest{Seq: r.Uint64() >> r.Intn(64), MaxRetries: uint32(r.Intn(3))}
		for j := r.Intn(6); j > 0; j-- {
			op := &rolisv1.Op{Kind: rolisv1.Op_Kind(r.Intn(6)), Key: randomBytes(r, 30), Value: randomBytes(r, 300)}
			if r.Intn(3) == 0 {
				op.Table = "orders"
				op.Expected = randomBytes(r, 10)
				op.ExpectAbsent = r.Intn(2) == 0
				op.EndKey = randomBytes(r, 10)
				op.Limit = uint32(r.Intn(1000))
			}
			req.Ops = append(req.Ops, op)
		}
		m.Requests = append(m.Requests, req)
	}
	return m
}

// The codec encodes requests byte for byte as the standard codec does.
func TestBatchCodecEncodesLikeTheStandardCodec(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	codec := newBatchCodec()
	for i := 0; i < 500; i++ {
		m := randomBatchRequest(r)
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := codec.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Materialize()) != string(want) {
			t.Fatalf("case %d: encoded differently:\nwant % x\ngot  % x", i, want, got.Materialize())
		}
	}
}

// A table name that is not UTF-8 gets the standard encoder's error.
func TestBatchCodecRefusesInvalidUTF8(t *testing.T) {
	m := &rolisv1.ExecuteBatchRequest{Requests: []*rolisv1.ExecuteRequest{{Ops: []*rolisv1.Op{{Kind: rolisv1.Op_GET, Table: "\xff", Key: []byte("k")}}}}}
	if _, err := newBatchCodec().Marshal(m); err == nil {
		t.Fatal("a table name of invalid UTF-8 was encoded")
	}
}

// Procedure calls (and a reply's output) are the standard codec's: the
// request's procedure and args, and the reply's output, survive the trip.
func TestBatchCodecKeepsProcedureCallsAndTheirOutput(t *testing.T) {
	codec := newBatchCodec()
	m := &rolisv1.ExecuteBatchRequest{Requests: []*rolisv1.ExecuteRequest{
		{Seq: 1, Ops: []*rolisv1.Op{{Kind: rolisv1.Op_GET, Key: []byte("k")}}},
		{Seq: 2, Procedure: "bank.transfer", Args: []uint64{3, 4, 10}},
	}}
	b, err := codec.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back rolisv1.ExecuteBatchRequest
	if err := proto.Unmarshal(b.Materialize(), &back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&back, m) {
		t.Fatalf("round trip: got %v, want %v", &back, m)
	}
	reply := &rolisv1.ExecuteBatchResponse{Responses: []*rolisv1.ExecuteResponse{{Seq: 2, Output: []int64{1, 0}, CommitTs: 9}}}
	rb, err := proto.Marshal(reply)
	if err != nil {
		t.Fatal(err)
	}
	var got rolisv1.ExecuteBatchResponse
	if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(rb)}, &got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, reply) {
		t.Fatalf("reply: got %v, want %v", &got, reply)
	}
}
