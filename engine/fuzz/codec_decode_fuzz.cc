// libFuzzer target: the batch payload decoders of codec.h (DecodeBatch,
// CheckPayload), which read what a follower received.
// Input: 4 bytes txn count (little-endian), 8 bytes last_ts, then the payload.
// Checks: no crash, the two decoders agree, a payload that decodes encodes
// back (AppendTxn) to the same bytes, and a well-formed patch applies only
// inside a value of the length it names.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "codec.h"
#include "rolis/value_patch.h"

using namespace rolis;
using namespace rolis::replication;

namespace {
void Require(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "codec_decode_fuzz: %s\n", what);
    abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 12) return 0;
  uint32_t count = 0;
  uint64_t last_ts = 0;
  std::memcpy(&count, data, 4);
  std::memcpy(&last_ts, data + 4, 8);
  count %= 4096;  // the wire's txn_count is any uint32; larger counts only truncate sooner
  const std::string payload(reinterpret_cast<const char*>(data + 12), size - 12);

  DecodedBatch batch;
  const Status sb = DecodeBatch(payload, count, last_ts, &batch);
  const Status sc = CheckPayload(payload, count, last_ts, Crc32c(payload));
  Require(sb.ok() == sc.ok(), "decoders disagree");
  Require(CheckPayload(payload, count, last_ts, Crc32c(payload) ^ 1).code() == StatusCode::kInvalidArgument,
          "a wrong CRC is not refused");
  if (!sb.ok()) {
    Require(sb.code() == StatusCode::kInvalidArgument && !sb.message().empty(), "error without a clear message");
    Require(batch.size() == 0, "a refused payload left decoded transactions");
    return 0;
  }
  Require(batch.size() == count, "wrong transaction count");
  std::string again;
  for (size_t i = 0; i < batch.size(); i++) {
    AppendTxn(&again, batch.ts(i), batch.writes(i));
    for (const WriteRecord& w : batch.writes(i)) {
      if (!w.is_patch) continue;
      // A patch names runs inside a value; it must apply within a value it
      // fits, and be refused by one it does not.
      for (size_t len : {size_t{0}, size_t{16}, size_t{4096}}) {
        std::string value(len, 'x');
        if (PatchFits(w.value, len)) {
          Require(ApplyPatch(w.value, value.data(), value.size()), "a fitting patch failed");
        } else {
          Require(!ApplyPatch(w.value, value.data(), value.size()) && value == std::string(len, 'x'),
                  "a patch that does not fit applied or changed the value");
        }
      }
    }
  }
  Require(again == payload, "decoded payload does not encode back to the same bytes");
  return 0;
}
