// Filling a buffer that this core will not read again (a batch's payload:
// the loop and the senders take it on another core, and its buffer comes
// back for reuse only after the retained log lets it go, cold by then).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rolis::replication {

// Appends to such a buffer writing each of its 64-byte lines whole, with
// non-temporal stores: they go to memory without first reading the line
// in and without evicting what this core keeps in cache. The bytes of the
// line being filled wait in the writer (in this core's cache) until the
// line is complete; Finish writes the last, partial line. Before, each
// append wrote the lines at its two ends with plain stores: a read of a
// cold line for almost every transaction (YCSB++'s are ~64 bytes), and a
// store fence per transaction.
//
// One writer per buffer being filled, used by one thread at a time.
class PastCacheWriter {
 public:
  // Appends `bytes` at `*used` in `out` and advances `*used`. `out` may be
  // longer than `*used` (a reused buffer: its old bytes are overwritten, not
  // zeroed first) and grows only by what does not fit.
  void Append(std::string* out, size_t* used, std::string_view bytes);
  // Completes out[0, used) (the bytes still waiting in the writer), with a
  // store fence, so that another core sees all of it once the caller
  // publishes the buffer (unlocks a mutex, pushes a pointer).
  void Finish(std::string* out, size_t used);
  // Drops the waiting bytes: the buffer is started again from 0.
  void Reset() { waiting_ = 0; }

 private:
  static constexpr size_t kLine = 64;
  // Writes the waiting bytes into out, whose first `used` bytes they end.
  void Flush(std::string* out, size_t used);

  alignas(kLine) char line_[kLine];
  size_t waiting_ = 0;  // line_[0, waiting_) belongs at out[used - waiting_, used), a line start
};

}  // namespace rolis::replication
