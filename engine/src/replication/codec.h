// Compact encoding of the transactions of a batch (Batch::payload), CRC32C
// checked. Per transaction:
//   u64 ts | u32 writes | per write: u32 table | u8 flags (1 = delete) |
//   u32 key length | key | u32 value length | value
// little endian. The leader appends on the commit path (no allocation once
// the buffer has grown); replicas decode with every length checked, so a
// corrupt or truncated payload is an error and applies nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rolis/db.h"
#include "rolis/status.h"

namespace rolis::replication {

uint32_t Crc32c(std::string_view data, uint32_t crc = 0);

// Appends one transaction to `out`.
void AppendTxn(std::string* out, uint64_t ts, std::span<const WriteRecord> writes);

// One decoded transaction; its views point into the payload.
struct DecodedTxn {
  uint64_t ts = 0;
  std::vector<WriteRecord> writes;
};

// Decodes a payload of `count` transactions whose ts strictly increase and
// end at `last_ts` (0 = do not check). Checks the CRC when `crc` is given.
Status DecodeTxns(std::string_view payload, uint32_t count, uint64_t last_ts, std::vector<DecodedTxn>* out);
Status CheckPayload(std::string_view payload, uint32_t count, uint64_t last_ts, uint32_t crc);

}  // namespace rolis::replication
