// libFuzzer target: the conversions of wire.h from the replication wire
// messages (replication.proto) to the C++ types a member acts on. The first
// byte picks the message (AcceptRequest, PromiseResponse, ControlRequest,
// ControlResponse, EpochRecord, AcceptResponse, PromiseRequest); the rest is its protobuf
// encoding. Checks: no crash, a refusal says why, and what converts converts
// back to the same message (ToWire after FromWire is a fixed point).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "wire.h"

using namespace rolis;
using namespace rolis::replication;

namespace {

void Require(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "wire_fuzz: %s\n", what);
    abort();
  }
}

std::string Bytes(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

// from(wire) -> native; to(native) -> wire. Converts twice and requires the
// second wire form to equal the first.
template <typename Wire, typename Native, typename From, typename To>
void RoundTrip(const Wire& in, From from, To to) {
  Native n1{};
  std::string error;
  if (!from(in, &n1, &error)) {
    Require(!error.empty(), "a refused message without a reason");
    return;
  }
  Wire w1, w2;
  to(n1, &w1);
  Native n2{};
  Require(from(w1, &n2, &error), "a converted message refused on the way back");
  to(n2, &w2);
  Require(Bytes(w1) == Bytes(w2), "conversion is not a fixed point");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 7) {
    case 0: {
      v1::AcceptRequest r;
      if (!r.ParseFromString(body)) return 0;
      RoundTrip<v1::AcceptRequest, AcceptMsg>(
          r,
          [](const v1::AcceptRequest& w, AcceptMsg* m, std::string* e) {
            v1::AcceptRequest copy = w;
            return wire::FromWire(std::move(copy), m, e);
          },
          [](const AcceptMsg& m, v1::AcceptRequest* w) { wire::ToWire(m, w); });
      break;
    }
    case 1: {
      v1::PromiseResponse r;
      if (!r.ParseFromString(body)) return 0;
      RoundTrip<v1::PromiseResponse, PromiseReply>(
          r, [](const v1::PromiseResponse& w, PromiseReply* m, std::string* e) { return wire::FromWire(w, m, e); },
          [](const PromiseReply& m, v1::PromiseResponse* w) { wire::ToWire(m, w); });
      break;
    }
    case 2: {
      v1::ControlRequest r;
      if (!r.ParseFromString(body)) return 0;
      RoundTrip<v1::ControlRequest, ControlMsg>(
          r, [](const v1::ControlRequest& w, ControlMsg* m, std::string* e) { return wire::FromWire(w, m, e); },
          [](const ControlMsg& m, v1::ControlRequest* w) { wire::ToWire(m, w); });
      break;
    }
    case 3: {
      v1::ControlResponse r;
      if (!r.ParseFromString(body)) return 0;
      RoundTrip<v1::ControlResponse, ControlReply>(
          r,
          [](const v1::ControlResponse& w, ControlReply* m, std::string*) {
            *m = wire::FromWire(w);
            return true;
          },
          [](const ControlReply& m, v1::ControlResponse* w) { wire::ToWire(m, w); });
      break;
    }
    case 4: {
      v1::EpochRecord r;
      if (!r.ParseFromString(body)) return 0;
      RoundTrip<v1::EpochRecord, DecidedPtr>(
          r,
          [](const v1::EpochRecord& w, DecidedPtr* m, std::string*) {
            *m = wire::FromWire(w);
            return true;
          },
          [](const DecidedPtr& m, v1::EpochRecord* w) {
            if (m) wire::ToWire(*m, w);
          });
      break;
    }
    case 5: {
      v1::AcceptResponse r;
      if (!r.ParseFromString(body)) return 0;
      RoundTrip<v1::AcceptResponse, AcceptReply>(
          r,
          [](const v1::AcceptResponse& w, AcceptReply* m, std::string*) {
            *m = wire::FromWire(w);
            return true;
          },
          [](const AcceptReply& m, v1::AcceptResponse* w) { wire::ToWire(m, w); });
      break;
    }
    case 6: {
      // from_slot of any length converts; the acceptor judges it.
      v1::PromiseRequest r;
      if (!r.ParseFromString(body)) return 0;
      RoundTrip<v1::PromiseRequest, PromiseMsg>(
          r,
          [](const v1::PromiseRequest& w, PromiseMsg* m, std::string*) {
            *m = wire::FromWire(w, 0);
            return true;
          },
          [](const PromiseMsg& m, v1::PromiseRequest* w) { wire::ToWire(m, w); });
      Require(wire::FromWire(r, 0).from_slot.size() == static_cast<size_t>(r.from_slot_size()),
              "from_slot lost entries");
      break;
    }
  }
  return 0;
}
