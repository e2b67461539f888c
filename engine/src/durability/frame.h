// Frames: the unit of every durable file (docs/replication.md, "Durability").
//
//   offset 0  u32  payload length n (little-endian, at most kMaxFramePayload)
//   offset 4  u32  masked CRC32C of the type byte and the payload
//   offset 8  u8   type (FrameType)
//   offset 9  n bytes of payload (record_codec.h)
//
// The CRC is masked (rotated and offset, as LevelDB does) so that a file of
// zeros, or a frame holding frames, does not check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "rolis/status.h"

namespace rolis::durability {

enum class FrameType : uint8_t {
  kFileHeader = 1,
  kSlot = 2,
  kPromise = 3,
  kControlVote = 4,
  kDecided = 5,
  kCheckpointHeader = 6,
  kCheckpointWrites = 7,
  kCheckpointEnd = 8,
};
constexpr uint8_t kMaxFrameType = 8;

constexpr size_t kFrameHeaderBytes = 9;
constexpr uint32_t kMaxFramePayload = 1u << 28;  // 256 MiB: larger than any batch or chunk

// The 9-byte header of a frame whose payload is the concatenation of parts.
std::string FrameHeader(FrameType type, std::string_view part1, std::string_view part2 = {});
// Appends a whole frame to *out.
void AppendFrame(std::string* out, FrameType type, std::string_view payload);

enum class FrameFault { kNone, kShortHeader, kShortPayload, kTooLarge, kBadChecksum, kUnknownType };
const char* FrameFaultName(FrameFault f);

struct Frame {
  FrameType type{};
  std::string_view payload;
};

// Parses the frame at `offset` of `data`; on kNone, *next is the offset after it.
FrameFault ParseFrame(std::string_view data, size_t offset, Frame* out, size_t* next);

// True if a well-formed frame starts at some offset in (from, end) of data.
// Looks at every offset, checking the CRC of at most `budget` bytes in all;
// true when the budget runs out (it cannot rule it out).
bool ValidFrameAfter(std::string_view data, size_t from, uint64_t budget = 256u << 20);

// The walk over a file's frames: how far the frames are good, and what is
// wrong at the first bad one.
struct FrameScan {
  size_t valid_end = 0;          // offset after the last good frame
  FrameFault fault = FrameFault::kNone;
  bool tail = false;             // nothing well formed follows the bad frame
};
// Calls fn(frame, offset) for every good frame from the start; a non-OK
// status from fn stops the walk and is returned.
Status ScanFrames(std::string_view data, const std::function<Status(const Frame&, size_t offset)>& fn,
                  FrameScan* out);

// Reads one frame from a sequential source of `remaining` bytes (the rest
// of the file): a length beyond `remaining` is a short payload, never an
// allocation. *fault says what is wrong when not kNone; the status is an I/O error.
class SequentialFile;
Status ReadFrame(SequentialFile& f, uint64_t remaining, std::string* buf, Frame* out, FrameFault* fault,
                 size_t* consumed);

}  // namespace rolis::durability
