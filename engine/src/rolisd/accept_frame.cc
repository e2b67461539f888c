#include "accept_frame.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "wire.h"

namespace rolis::replication::wire {
namespace {

using google::protobuf::internal::WireFormatLite;

// Appends a length-delimited field's tag and length.
void PutFieldHeader(std::string* out, int field, size_t length) {
  uint8_t buf[2 * 5];
  uint8_t* p = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(
      WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED), buf);
  p = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(length, p);
  out->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(p - buf));
}

size_t FieldHeaderSize(int field, size_t length) {
  return google::protobuf::io::CodedOutputStream::VarintSize32(
             WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) +
         google::protobuf::io::CodedOutputStream::VarintSize64(length);
}

// The slice's reference to the batch, dropped when gRPC is done with it.
void ReleaseBatch(void* ref) { delete static_cast<BatchPtr*>(ref); }

}  // namespace

AcceptFrameParts AcceptFramePartsOf(const AcceptMsg& m) {
  AcceptFrameParts out;
  v1::AcceptRequest head;
  ToWire(m, &head, Payload::kOmit);
  out.head = head.SerializeAsString();
  const BatchPtr& batch = m.slot.value;
  if (!batch || batch->payload.empty()) return out;
  // slot { value { encoded: payload } }, the lengths from the inside out.
  const size_t n = batch->payload.size();
  const size_t encoded_field = FieldHeaderSize(v1::Batch::kEncodedFieldNumber, n) + n;
  const size_t value_field = FieldHeaderSize(v1::Slot::kValueFieldNumber, encoded_field) + encoded_field;
  PutFieldHeader(&out.head, v1::AcceptRequest::kSlotFieldNumber, value_field);
  PutFieldHeader(&out.head, v1::Slot::kValueFieldNumber, encoded_field);
  PutFieldHeader(&out.head, v1::Batch::kEncodedFieldNumber, n);
  out.batch = batch;
  return out;
}

grpc::ByteBuffer AcceptFrame(const AcceptMsg& m) {
  AcceptFrameParts parts = AcceptFramePartsOf(m);
  if (!parts.batch) {
    grpc::Slice only(parts.head);
    return grpc::ByteBuffer(&only, 1);
  }
  const size_t n = parts.batch->payload.size();
  char* payload = const_cast<char*>(parts.batch->payload.data());  // gRPC only reads it
  grpc::Slice slices[2] = {
      grpc::Slice(parts.head),
      grpc::Slice(payload, n, ReleaseBatch, new BatchPtr(std::move(parts.batch))),
  };
  return grpc::ByteBuffer(slices, 2);
}

}  // namespace rolis::replication::wire
