// The transactions of a batch (Batch::payload): a sequence of transactions
// in the encoding of rolis/txn_encoding.h, CRC32C checked. The leader
// appends each on the commit path (stream_copy.h); replicas decode with
// every length checked, so a corrupt or truncated payload is an error and
// applies nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crc32c.h"
#include "rolis/db.h"
#include "rolis/status.h"
#include "rolis/txn_encoding.h"

namespace rolis::replication {

using txn_encoding::AppendTxn;

// The transactions of a payload decoded into two flat arrays, reused from
// one batch to the next (no allocation per transaction once they have
// grown). Views point into the payload.
class DecodedBatch {
 public:
  size_t size() const { return txns_.size(); }
  uint64_t ts(size_t i) const { return txns_[i].ts; }
  std::span<const WriteRecord> writes(size_t i) const {
    return std::span<const WriteRecord>(writes_.data() + txns_[i].first, txns_[i].count);
  }
  void clear() {
    txns_.clear();
    writes_.clear();
  }

 private:
  friend Status DecodeBatch(std::string_view, uint32_t, uint64_t, DecodedBatch*);
  struct Txn {
    uint64_t ts;
    uint32_t first, count;  // its writes in writes_
  };
  std::vector<Txn> txns_;
  std::vector<WriteRecord> writes_;
};

// Decodes a payload of `count` transactions whose ts strictly increase and
// end at `last_ts` (0 = do not check) into `out`; every length is checked,
// and on an error `out` is cleared.
Status DecodeBatch(std::string_view payload, uint32_t count, uint64_t last_ts, DecodedBatch* out);

// DecodeBatch's checks and the CRC, keeping nothing.
Status CheckPayload(std::string_view payload, uint32_t count, uint64_t last_ts, uint32_t crc);

}  // namespace rolis::replication
