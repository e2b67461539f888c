// The replicated log on disk: one set of segment files per stream, after
// SiloR's per-thread logs (docs/replication.md, "Durability").
//
//   <dir>/stream-<t>/<name>.log   name = the first slot the segment holds,
//                                 zero-padded to 20 digits, and above the
//                                 previous segment's name (a re-sent lower
//                                 slot may open a segment)
//
// A segment is a file header frame, then one slot frame per accepted slot in
// the order they were accepted (the latest frame for a slot wins on
// recovery). A segment rolls once it would pass `segment_bytes`; the full
// one is fdatasync'ed before anything is written to the next, so only the
// newest segment of a stream can have a torn tail after a crash.
//
// Group commit: Append only writes (the page cache); one syncer thread
// fdatasyncs every file written since its last round (and the directory of
// a new segment), then advances each stream's durable position to what was
// appended when the round began. One sync thus covers every slot appended
// meanwhile, from every caller. A failed write that cannot be undone or a
// failed sync puts the log in a failed state for good: nothing more becomes
// durable and every wait fails (fsync errors cannot be retried: the kernel
// may have dropped the dirty pages).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "file_env.h"
#include "rolis/status.h"
#include "types.h"

namespace rolis::durability {

struct StreamLogOptions {
  uint64_t segment_bytes = 64ull << 20;
};

// A segment file of a stream.
struct SegmentInfo {
  std::string path;
  uint64_t name = 0;       // from the file name
  bool has_slots = false;
  uint64_t max_slot = 0;   // highest slot index in it (if has_slots)
  uint64_t bytes = 0;
};

struct StreamLogStats {
  uint64_t appends = 0;
  uint64_t bytes = 0;
  uint64_t sync_rounds = 0;     // rounds of the syncer that synced something
  uint64_t fdatasyncs = 0;      // file syncs, by the syncer and at rolls
  uint64_t segments_created = 0;
  uint64_t segments_removed = 0;
};

class StreamLogSet {
 public:
  // Opens the logs of `streams` streams under `dir` (creating what is
  // missing). `existing[t]`, when given, lists stream t's segments as the
  // recovery reader found them (recovery.h); new slots go to a new segment
  // after them. Without it the segments are listed, and kept until a
  // recovery tells what they hold.
  static Status Open(Env* env, const std::string& dir, uint32_t streams, const StreamLogOptions& opts,
                     const std::vector<std::vector<SegmentInfo>>* existing, std::unique_ptr<StreamLogSet>* out);
  ~StreamLogSet();  // a last sync round, then the syncer stops

  uint32_t streams() const { return static_cast<uint32_t>(streams_.size()); }

  // Writes slot (accepted on stream t) and returns its position: 1, 2, ...
  // per stream in this process. A write that failed and could be undone
  // returns its error and leaves the log as it was (a full disk); one that
  // could not be undone fails the log.
  Status Append(uint32_t t, const replication::Slot& slot, uint64_t* position);
  uint64_t DurableThrough(uint32_t t) const;
  uint64_t Appended(uint32_t t) const;
  // OK once `position` of stream t is durable; the log's error once failed;
  // ABORTED at the deadline.
  Status WaitDurable(uint32_t t, uint64_t position, replication::SteadyClock::time_point deadline);
  // Called on the syncer thread after a stream's durable position moved,
  // and for every stream once the log failed.
  void SetListener(std::function<void(uint32_t stream)> fn);
  Status Health() const;

  // Removes stream t's oldest segments while every slot in them is below
  // `slot` (truncation behind a checkpoint). The segment being written stays.
  Status RemoveBelow(uint32_t t, uint64_t slot, size_t* removed = nullptr);

  std::vector<SegmentInfo> Segments(uint32_t t) const;
  StreamLogStats stats() const;

  static std::string StreamDir(const std::string& dir, uint32_t t);
  static std::string SegmentFileName(uint64_t name);
  // Parses "<20 digits>.log"; false for any other name.
  static bool ParseSegmentFileName(const std::string& file, uint64_t* name);

 private:
  struct Stream {
    mutable std::mutex mu;
    std::string dir;
    std::vector<SegmentInfo> segments;   // in order; the last is `cur` once set
    std::shared_ptr<WritableFile> cur;
    uint64_t cur_size = 0;
    uint64_t next_name = 0;
    uint64_t appended = 0;
    bool dir_dirty = false;
    std::atomic<uint64_t> durable{0};
  };

  StreamLogSet(Env* env, std::string dir, const StreamLogOptions& opts) : env_(env), dir_(std::move(dir)), opts_(opts) {}
  Status Roll(uint32_t t, Stream& s, uint64_t first_slot);  // under s.mu
  void Fail(const Status& st);
  void SyncLoop();

  Env* env_;
  std::string dir_;
  StreamLogOptions opts_;
  std::vector<std::unique_ptr<Stream>> streams_;

  mutable std::mutex sync_mu_;          // after any Stream::mu
  std::condition_variable sync_cv_;     // the syncer waits for work
  std::condition_variable durable_cv_;  // WaitDurable waits for the syncer
  bool work_ = false;
  bool stop_ = false;
  Status failed_;
  std::atomic<bool> failed_flag_{false};
  std::shared_ptr<std::function<void(uint32_t)>> listener_;  // under sync_mu_
  std::thread syncer_;

  std::atomic<uint64_t> appends_{0}, bytes_{0}, rounds_{0}, fdatasyncs_{0}, created_{0}, removed_{0};
};

}  // namespace rolis::durability
