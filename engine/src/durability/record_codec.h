// The payloads of frames (frame.h): a versioned little-endian binary
// encoding of the replication types (types.h) as they are kept on disk.
// Every payload starts with a format version byte (kRecordVersion); a
// decoder refuses a version it does not know.
//
// Decoders take bytes read from disk: they never crash and never allocate
// more than the input could hold (a count is checked against the bytes
// left before anything is reserved); they return INVALID_ARGUMENT naming
// the record and the field that is wrong.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "acceptor_journal.h"
#include "rolis/status.h"
#include "types.h"

namespace rolis::durability {

constexpr uint8_t kRecordVersion = 1;

inline void PutU8(std::string* o, uint8_t v) { o->push_back(static_cast<char>(v)); }
inline void PutU32(std::string* o, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; i++) b[i] = static_cast<char>(v >> (8 * i));
  o->append(b, 4);
}
inline void PutU64(std::string* o, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; i++) b[i] = static_cast<char>(v >> (8 * i));
  o->append(b, 8);
}
inline void PutBytes(std::string* o, std::string_view s) {
  PutU32(o, static_cast<uint32_t>(s.size()));
  o->append(s);
}
inline uint32_t LoadU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
inline uint64_t LoadU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// Reads fields in order; the first failure sticks and names the field.
class ByteReader {
 public:
  ByteReader(std::string_view in, const char* what) : in_(in), what_(what) {}
  bool U8(uint8_t* v, const char* field);
  bool U32(uint32_t* v, const char* field);
  bool U64(uint64_t* v, const char* field);
  bool Bytes(std::string_view* v, const char* field);  // u32 length, then the bytes
  // A count of elements of at least `min_bytes` each: refused if they
  // could not fit in what is left.
  bool Count(uint32_t* n, size_t min_bytes, const char* field);
  bool Version(const char* field = "version");
  bool Fail(const std::string& why);
  size_t left() const { return in_.size() - pos_; }
  // OK if every field read and nothing is left over.
  Status Finish();
  const Status& status() const { return status_; }

 private:
  bool Need(size_t n, const char* field);
  std::string_view in_;
  size_t pos_ = 0;
  const char* what_;
  Status status_;
};

// The first frame of every file.
enum class FileKind : uint8_t { kSegment = 1, kJournal = 2, kCheckpoint = 3 };
struct FileHeader {
  FileKind kind = FileKind::kSegment;
  uint32_t stream = 0;  // segments
  uint64_t key = 0;     // segments: the segment's name (its first slot)
};
std::string EncodeFileHeader(const FileHeader& h);
Status DecodeFileHeader(std::string_view in, FileHeader* out);

// A slot accepted on a stream. The frame's payload is the meta part
// followed by the batch payload, which is not copied when written.
std::string EncodeSlotMeta(uint32_t stream, const replication::Slot& slot);
Status DecodeSlot(std::string_view in, uint32_t* stream, replication::Slot* out);

std::string EncodePromise(uint64_t epoch);
Status DecodePromise(std::string_view in, uint64_t* epoch);

std::string EncodeDecided(const replication::Decided& d);
Status DecodeDecided(std::string_view in, replication::DecidedPtr* out);

std::string EncodeControlVote(const replication::ControlVote& v);
Status DecodeControlVote(std::string_view in, replication::ControlVote* out);

// Checkpoints (checkpoint.h): a header (a SnapshotReply without its
// writes), chunks of writes, and an end frame counting them.
std::string EncodeCheckpointHeader(const replication::SnapshotReply& h);
Status DecodeCheckpointHeader(std::string_view in, replication::SnapshotReply* out);
// Chunk: version, u32 count, then per write u32 table, key, value.
void BeginWritesChunk(std::string* out);
void AddToWritesChunk(std::string* out, uint32_t table, std::string_view key, std::string_view value);
void FinishWritesChunk(std::string* out, uint32_t count);  // patches the count
Status DecodeWritesChunk(std::string_view in, std::vector<replication::SnapshotWrite>* out);
// The same checks, each write handed to `fn` as views into `in` (no copy);
// a non-OK status from fn stops the walk and is returned.
using WriteVisitor = std::function<Status(uint32_t table, std::string_view key, std::string_view value)>;
Status ForEachInWritesChunk(std::string_view in, const WriteVisitor& fn);
struct CheckpointEnd {
  uint64_t writes = 0;
  uint64_t chunks = 0;
};
std::string EncodeCheckpointEnd(const CheckpointEnd& e);
Status DecodeCheckpointEnd(std::string_view in, CheckpointEnd* out);

}  // namespace rolis::durability
