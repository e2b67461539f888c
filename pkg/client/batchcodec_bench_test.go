package client

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// The batch codec against the generated protobuf code (grpc's standard
// codec) on the messages of a YCSB++ benchmark batch: n transactions of 4
// reads of 16-byte keys, half of them read-write (4 more writes of 8-byte
// values), and a reply of n responses of 4 results with 8-byte values.
func benchBatch(n int) (*rolisv1.ExecuteBatchRequest, []byte) {
	req := &rolisv1.ExecuteBatchRequest{}
	reply := &rolisv1.ExecuteBatchResponse{}
	for i := range n {
		r := &rolisv1.ExecuteRequest{Seq: uint64(1000 + i), MaxRetries: 5}
		resp := &rolisv1.ExecuteResponse{Seq: uint64(1000 + i), Epoch: 3, CommitTs: uint64(1)<<40 + uint64(i)}
		for k := range 4 {
			key := []byte(fmt.Sprintf("user%012d", i*4+k))
			r.Ops = append(r.Ops, &rolisv1.Op{Kind: rolisv1.Op_GET, Key: key})
			resp.Results = append(resp.Results, &rolisv1.OpResult{Found: true, Value: []byte("01234567")})
		}
		if i%2 == 1 {
			for k := range 4 {
				r.Ops = append(r.Ops, &rolisv1.Op{Kind: rolisv1.Op_PUT, Key: r.Ops[k].Key, Value: []byte("76543210")})
			}
		}
		req.Requests = append(req.Requests, r)
		reply.Responses = append(reply.Responses, resp)
	}
	b, err := encoding.GetCodecV2(protocodec.Name).Marshal(reply)
	if err != nil {
		panic(err)
	}
	return req, b.Materialize()
}

func BenchmarkBatchCodec(b *testing.B) {
	codecs := []struct {
		name  string
		codec encoding.CodecV2
	}{{"batchcodec", newBatchCodec()}, {"protobuf", encoding.GetCodecV2(protocodec.Name)}}
	for _, n := range []int{1, 16, 64} {
		req, reply := benchBatch(n)
		for _, c := range codecs {
			b.Run(fmt.Sprintf("marshal/txns=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					out, err := c.codec.Marshal(req)
					if err != nil {
						b.Fatal(err)
					}
					out.Free()
				}
			})
			b.Run(fmt.Sprintf("unmarshal/txns=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					var m rolisv1.ExecuteBatchResponse
					if err := c.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(reply)}, &m); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
