// The leader's state of one stream and of each peer in it; LeaderStreams
// owns them (the worker's fields under its worker mutex, the rest under the
// leader lock).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "batch_buffers.h"
#include "spsc.h"
#include "stream_copy.h"
#include "types.h"

namespace rolis::replication {

// What the leader knows of one peer in one stream.
struct PeerState {
  uint32_t id = 0;
  uint64_t acked = 0;      // has accepted every slot in [log_start, acked) of this epoch (monotone)
  uint64_t prefix = 0;     // what it last said it holds: resending starts here
  uint64_t next_send = 0;  // next slot to send
  uint64_t rewind_point = UINT64_MAX;
  SteadyClock::time_point last_reply{}, last_rewind{}, last_progress{};
  uint64_t replayed_next = 0;
  SteadyClock::time_point catching_up_at{};  // last said it catches up by state transfer
  bool heard = false;
  bool active = true;  // in a configuration the leader counts, or a learner: sent to
};

// One worker stream as its leader runs it (docs/replication.md, "How the
// leader runs the streams"): the batch its worker fills, the ring of closed
// batches to the leader loop, and the loop's log of this epoch with what
// every peer holds of it.
struct LeaderStream {
  explicit LeaderStream(size_t ring_capacity) : ring(ring_capacity) {}
  // Worker side: under the worker's mutex. buf holds the batch being
  // filled in its first buf_used bytes (a reused buffer is longer),
  // written through writer.
  std::string buf;
  size_t buf_used = 0;
  PastCacheWriter writer;
  uint32_t count = 0;
  uint64_t buf_last_ts = 0;
  uint64_t closed_ts = 0;  // key ts of the last batch closed in this epoch
  SteadyClock::time_point started{}, last_close{};
  std::atomic<uint64_t> leading{0};        // the epoch while open, else 0
  std::atomic<uint64_t> epoch_max_ts{0};   // largest ts committed in the epoch led last
  std::atomic<bool> orphan{false};         // committed while not open: never replicated
  // Closed batches, to the loop. Not const yet: the loop checksums them.
  SpscRing<std::shared_ptr<Batch>> ring;
  // Their buffers, back from freed batches (batch_buffers.h): enough for
  // two compactions' worth of slots, at most 32 MB.
  std::shared_ptr<BatchBuffers> buffers;
  // Loop side: under the leader lock (LeaderStreams).
  struct Entry {
    uint64_t index;
    BatchPtr value;
    LogKey reach;  // largest key in the log up to and including this slot
    uint64_t start_bytes = 0;  // appended_bytes before this slot was appended
  };
  std::deque<Entry> log;
  uint64_t appended_bytes = 0;  // bytes of every slot ever appended to `log` (monotone)
  void Append(uint64_t index, BatchPtr value, LogKey reach) {
    const uint64_t start = appended_bytes;
    appended_bytes += value->bytes();
    log.push_back({index, std::move(value), reach, start});
  }
  // Bytes of the slots from `e` to the end of the log.
  uint64_t BytesFrom(const Entry& e) const { return appended_bytes - e.start_bytes; }
  uint64_t BytesFrom(uint64_t index) const {
    if (index < log_start) index = log_start;
    return index - log_start < log.size() ? BytesFrom(log[index - log_start]) : 0;
  }
  // The first slot of the newest run of slots holding at most `slots`
  // slots and `bytes` bytes.
  uint64_t NewestWithin(uint64_t slots, uint64_t bytes) const {
    uint64_t from = next_index > slots ? std::max(next_index - slots, log_start) : log_start;
    auto it = std::partition_point(log.begin() + static_cast<ptrdiff_t>(from - log_start), log.end(),
                                   [&](const Entry& e) { return BytesFrom(e) > bytes; });
    return it == log.end() ? next_index : it->index;
  }
  uint64_t log_start = 0, next_index = 0, barrier_index = 0;
  LogKey base_reach{};
  LogKey walk_reach{};       // the failover walk's reach over compacted log entries
  uint64_t walk_barrier = 0;
  uint64_t self_prefix = 0;
  uint64_t c_end = 0;
  LogKey c_key{};
  SteadyClock::time_point c_end_moved{};  // when c_end last grew (or the epoch opened)
  std::vector<PeerState> peers;
};

}  // namespace rolis::replication
