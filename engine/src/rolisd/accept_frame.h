// The bytes of an AcceptRequest as the leader sends them, built without
// copying the batch's payload.
//
// The generated code would copy a payload twice per follower (into the
// message's `encoded` field, then into the serialized buffer): in
// replicated TPC-C (3 KB per transaction) those copies were 2% of the CPU the
// leader's sending threads share with the followers (docs/benchmarks.md,
// "Accept stream instead of gRPC's Replicate call").
// Here the message without the payload is serialized (small), followed by
// the payload as a second occurrence of slot { value { encoded } }, which a
// protobuf parser merges into the first (a singular message field that
// appears twice is merged: the encoding's rule). The payload's slice refers
// to the batch's own bytes and holds a reference to the batch until gRPC
// has sent it. The follower parses the result as an ordinary AcceptRequest.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <string>
#include <string_view>

#include "replication/types.h"

namespace rolis::replication::wire {

// The same bytes in two parts, for a writer of its own (accept_stream.h):
// the serialized head and the batch's payload, which `batch` keeps alive.
struct AcceptFrameParts {
  std::string head;
  BatchPtr batch;
  std::string_view payload() const {
    return batch ? std::string_view(batch->payload) : std::string_view();
  }
};
AcceptFrameParts AcceptFramePartsOf(const AcceptMsg& m);

grpc::ByteBuffer AcceptFrame(const AcceptMsg& m);

}  // namespace rolis::replication::wire
