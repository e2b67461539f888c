package client

import (
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// Fuzz targets of the batch codec (the seed corpora are under
// testdata/fuzz/<target>): `make test` runs each for a few seconds
// (go-fuzz), `make fuzz` longer. They go through the codec's gRPC interface
// (Marshal, Unmarshal) only, so they hold whatever encodes and decodes
// behind it.

// addSeeds adds each message, encoded, to the corpus.
func addSeeds[M proto.Message](f *testing.F, msgs []M) {
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// A reply from the network decodes as the standard protobuf decoder decodes
// it: the same verdict on malformed bytes, the same message otherwise.
func FuzzBatchResponseDecode(f *testing.F) {
	addSeeds(f, []*rolisv1.ExecuteBatchResponse{
		{},
		{Responses: []*rolisv1.ExecuteResponse{{Epoch: 3, CommitTs: 1 << 40, Seq: 7,
			Results: []*rolisv1.OpResult{{Found: true, Value: []byte("v")}, {}}}}},
		{Responses: []*rolisv1.ExecuteResponse{{ErrorCode: -1, ErrorMessage: "aborted: conflict", ConditionFailed: true}}},
		{Responses: []*rolisv1.ExecuteResponse{{Results: []*rolisv1.OpResult{{Items: []*rolisv1.KeyValue{{Key: []byte("a"), Value: []byte("b")}}}}}}},
	})
	codec := newBatchCodec()
	f.Fuzz(func(t *testing.T, data []byte) {
		want := &rolisv1.ExecuteBatchResponse{}
		wantErr := proto.Unmarshal(data, want)
		got := &rolisv1.ExecuteBatchResponse{}
		// A copy: the decoded values may alias the bytes.
		gotErr := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(append([]byte(nil), data...))}, got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("% x: standard decoder error %v, batch codec error %v", data, wantErr, gotErr)
		}
		if wantErr == nil && !proto.Equal(want, got) {
			t.Fatalf("% x: decoded differently:\nwant %s\ngot  %s", data, prototext.Format(want), prototext.Format(got))
		}
	})
}

// A request the client builds encodes byte for byte as the standard
// encoder (deterministic) encodes it, or fails as it does. The requests are
// made from fuzzed bytes by the standard decoder (fields it does not know
// dropped: the client never builds them).
func FuzzBatchRequestEncode(f *testing.F) {
	addSeeds(f, []*rolisv1.ExecuteBatchRequest{
		{},
		{Requests: []*rolisv1.ExecuteRequest{{Seq: 1, MaxRetries: 2, Ops: []*rolisv1.Op{
			{Kind: rolisv1.Op_PUT, Key: []byte("k"), Value: []byte("v")},
			{Kind: rolisv1.Op_GET, Table: "orders", Key: []byte("k"), Expected: []byte("x"), ExpectAbsent: true, EndKey: []byte("z"), Limit: 10},
		}}}},
	})
	codec := newBatchCodec()
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &rolisv1.ExecuteBatchRequest{}
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, m); err != nil {
			return
		}
		want, wantErr := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		got, gotErr := codec.Marshal(m)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%s: standard encoder error %v, batch codec error %v", prototext.Format(m), wantErr, gotErr)
		}
		if wantErr != nil {
			return
		}
		if b := got.Materialize(); string(b) != string(want) {
			t.Fatalf("%s: encoded differently:\nwant % x\ngot  % x", prototext.Format(m), want, b)
		}
	})
}
