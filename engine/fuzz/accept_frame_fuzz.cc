// libFuzzer target: accept frames (accept_frame.h). The input is an
// AcceptRequest as a follower may receive it; what FromWire accepts is
// framed again the leader's way (the head without the payload, then the
// payload as a second slot.value.encoded that the parser merges), and the
// frame must parse back to the same message, both as AcceptFramePartsOf's
// two parts (the accept stream) and as AcceptFrame's byte buffer (gRPC).
// A TXNS batch's payload then goes through CheckPayload, as a replica does
// before it accepts; a refusal must be a clear INVALID_ARGUMENT.
#include <grpc/grpc.h>
#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "accept_frame.h"
#include "codec.h"
#include "wire.h"

using namespace rolis;
using namespace rolis::replication;

namespace {

void Require(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "accept_frame_fuzz: %s\n", what);
    abort();
  }
}

std::string Canonical(const AcceptMsg& m) {
  v1::AcceptRequest w;
  wire::ToWire(m, &w);
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  w.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

// Parses frame bytes as a follower does; the message must equal `want`.
void RequireParsesTo(const std::string& frame, const std::string& want, const char* path) {
  v1::AcceptRequest r;
  Require(r.ParseFromString(frame), path);
  AcceptMsg m;
  std::string error;
  Require(wire::FromWire(std::move(r), &m, &error), path);
  Require(Canonical(m) == want, path);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  grpc_init();  // byte buffers use gRPC's slices
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  v1::AcceptRequest in;
  if (!in.ParseFromArray(data, static_cast<int>(size))) return 0;
  AcceptMsg m;
  std::string error;
  if (!wire::FromWire(std::move(in), &m, &error)) {
    Require(!error.empty(), "a refused accept without a reason");
    return 0;
  }
  const std::string want = Canonical(m);

  const wire::AcceptFrameParts parts = wire::AcceptFramePartsOf(m);
  RequireParsesTo(parts.head + std::string(parts.payload()), want, "accept stream frame does not parse back");

  grpc::ByteBuffer buffer = wire::AcceptFrame(m);
  std::vector<grpc::Slice> slices;
  Require(buffer.Dump(&slices).ok(), "byte buffer dump");
  std::string bytes;
  for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  RequireParsesTo(bytes, want, "gRPC accept frame does not parse back");

  const Batch& b = *m.slot.value;
  if (b.kind == BatchKind::kTxns) {
    const Status s = CheckPayload(b.payload, b.txn_count, b.last_ts, b.crc);
    Require(s.ok() || (s.code() == StatusCode::kInvalidArgument && !s.message().empty()),
            "a bad payload without a clear error");
  }
  return 0;
}
