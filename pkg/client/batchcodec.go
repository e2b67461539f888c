package client

import (
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// batchCodec is the codec of ExecuteBatchStream. It decodes replies
// (ExecuteBatchResponse) itself: the generic protobuf decoder allocates
// every response and every op result on its own and was a third of a
// benchmark client's CPU; here one reply costs a handful of allocations
// (one copy of the bytes, which the values point into, and one slab per
// message type). A reply it does not recognise field by field (a scan's
// items, a field added later) goes to the standard codec, as does every
// other message.
type batchCodec struct{ std encoding.CodecV2 }

func newBatchCodec() batchCodec { return batchCodec{std: encoding.GetCodecV2(protocodec.Name)} }

// Name is the standard one: the wire content type does not change.
func (c batchCodec) Name() string { return protocodec.Name }

func (c batchCodec) Marshal(v any) (mem.BufferSlice, error) { return c.std.Marshal(v) }

func (c batchCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(*rolisv1.ExecuteBatchResponse); ok {
		if decodeBatchResponse(data.Materialize(), m) {
			return nil
		}
		m.Reset()
	}
	return c.std.Unmarshal(data, v)
}

// Field numbers of client.proto.
const (
	fieldBatchResponses = 1

	fieldRespResults         = 1
	fieldRespConditionFailed = 2
	fieldRespEpoch           = 3
	fieldRespCommitTs        = 4
	fieldRespSeq             = 5
	fieldRespErrorCode       = 6
	fieldRespErrorMessage    = 7

	fieldResultFound = 1
	fieldResultValue = 2
)

// decodeBatchResponse fills m from b (values alias b) and reports whether
// every field was one it knows; on false m holds garbage.
func decodeBatchResponse(b []byte, m *rolisv1.ExecuteBatchResponse) bool {
	nResps, nResults, ok := countBatchResponse(b)
	if !ok {
		return false
	}
	resps := make([]rolisv1.ExecuteResponse, nResps)
	m.Responses = make([]*rolisv1.ExecuteResponse, nResps)
	results := make([]rolisv1.OpResult, nResults)
	resultPtrs := make([]*rolisv1.OpResult, nResults)
	for i := range results {
		resultPtrs[i] = &results[i]
	}
	i, used := 0, 0
	ok = eachField(b, func(num protowire.Number, typ protowire.Type, v uint64, body []byte) bool {
		if num != fieldBatchResponses || typ != protowire.BytesType {
			return false
		}
		r := &resps[i]
		m.Responses[i] = r
		i++
		first := used
		if !decodeExecuteResponse(body, r, resultPtrs, &used) {
			return false
		}
		if used > first {
			r.Results = resultPtrs[first:used:used]
		}
		return true
	})
	return ok && i == nResps && used == nResults
}

func decodeExecuteResponse(b []byte, r *rolisv1.ExecuteResponse, results []*rolisv1.OpResult, used *int) bool {
	return eachField(b, func(num protowire.Number, typ protowire.Type, v uint64, body []byte) bool {
		if typ == protowire.BytesType {
			switch num {
			case fieldRespResults:
				if *used >= len(results) {
					return false
				}
				res := results[*used]
				*used++
				return decodeOpResult(body, res)
			case fieldRespErrorMessage:
				r.ErrorMessage = string(body)
				return true
			}
			return false
		}
		if typ != protowire.VarintType {
			return false
		}
		switch num {
		case fieldRespConditionFailed:
			r.ConditionFailed = v != 0
		case fieldRespEpoch:
			r.Epoch = v
		case fieldRespCommitTs:
			r.CommitTs = v
		case fieldRespSeq:
			r.Seq = v
		case fieldRespErrorCode:
			r.ErrorCode = int32(v)
		default:
			return false
		}
		return true
	})
}

func decodeOpResult(b []byte, res *rolisv1.OpResult) bool {
	return eachField(b, func(num protowire.Number, typ protowire.Type, v uint64, body []byte) bool {
		switch {
		case num == fieldResultFound && typ == protowire.VarintType:
			res.Found = v != 0
		case num == fieldResultValue && typ == protowire.BytesType:
			res.Value = body[:len(body):len(body)] // an append must not reach the next value
		default:
			return false // items (a scan) or an unknown field
		}
		return true
	})
}

// countBatchResponse counts the responses of a reply and their op results.
func countBatchResponse(b []byte) (resps, results int, ok bool) {
	ok = eachField(b, func(num protowire.Number, typ protowire.Type, _ uint64, body []byte) bool {
		if num != fieldBatchResponses || typ != protowire.BytesType {
			return false
		}
		resps++
		return eachField(body, func(num protowire.Number, typ protowire.Type, _ uint64, _ []byte) bool {
			if num == fieldRespResults && typ == protowire.BytesType {
				results++
			}
			return true
		})
	})
	return resps, results, ok
}

// eachField calls f for every field of the message in b: a varint's value,
// or a length-delimited field's body (which aliases b). It stops at the
// first false, at malformed bytes, and at other wire types, and reports
// whether it went through all of b.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, body []byte) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var v uint64
		var body []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			body, n = protowire.ConsumeBytes(b)
		default:
			return false
		}
		if n < 0 || !f(num, typ, v, body) {
			return false
		}
		b = b[n:]
	}
	return true
}
