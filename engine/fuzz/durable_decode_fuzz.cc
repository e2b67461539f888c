// libFuzzer entry for the decoders of bytes read from a data directory
// (docs/replication.md, "Durability"): every input is scanned as a log or
// journal file (each good frame decoded by its type), read as a checkpoint
// file, and given to every record decoder directly (a mutation seldom
// passes a frame's CRC, so the decoders also see raw bytes). Decoders must
// never crash, hang or allocate more than the input could hold; what they
// accept must encode back to the same bytes (the encoding is canonical).
//
// engine/tests/durability/decode_fuzz_test.cc runs this entry over the seed
// corpus (engine/fuzz/corpus/durable_decode) and random mutations in ctest.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "checkpoint.h"
#include "frame.h"
#include "record_codec.h"

namespace {

using namespace rolis::durability;
namespace repl = rolis::replication;

void Check(bool ok) {
  if (!ok) std::abort();
}

void DecodeRecord(FrameType type, std::string_view p) {
  switch (type) {
    case FrameType::kFileHeader: {
      FileHeader h;
      if (DecodeFileHeader(p, &h).ok()) Check(EncodeFileHeader(h) == p);
      break;
    }
    case FrameType::kSlot: {
      uint32_t stream = 0;
      repl::Slot s;
      if (DecodeSlot(p, &stream, &s).ok()) Check(EncodeSlotMeta(stream, s) + s.value->payload == p);
      break;
    }
    case FrameType::kPromise: {
      uint64_t e = 0;
      if (DecodePromise(p, &e).ok()) Check(EncodePromise(e) == p);
      break;
    }
    case FrameType::kControlVote: {
      repl::ControlVote v;
      if (DecodeControlVote(p, &v).ok()) Check(EncodeControlVote(v) == p);
      break;
    }
    case FrameType::kDecided: {
      repl::DecidedPtr d;
      if (DecodeDecided(p, &d).ok()) Check(EncodeDecided(*d) == p);
      break;
    }
    case FrameType::kCheckpointHeader: {
      repl::SnapshotReply h;
      if (DecodeCheckpointHeader(p, &h).ok()) Check(EncodeCheckpointHeader(h) == p);
      break;
    }
    case FrameType::kCheckpointWrites: {
      std::vector<repl::SnapshotWrite> w;
      if (DecodeWritesChunk(p, &w).ok()) {
        std::string c;
        BeginWritesChunk(&c);
        for (const auto& x : w) AddToWritesChunk(&c, x.table, x.key, x.value);
        FinishWritesChunk(&c, static_cast<uint32_t>(w.size()));
        Check(c == p);
      }
      break;
    }
    case FrameType::kCheckpointEnd: {
      CheckpointEnd e;
      if (DecodeCheckpointEnd(p, &e).ok()) Check(EncodeCheckpointEnd(e) == p);
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // As a log or journal file.
  FrameScan scan;
  rolis::Status s = ScanFrames(in, [](const Frame& f, size_t) {
    DecodeRecord(f.type, f.payload);
    return rolis::Status::OK();
  }, &scan);
  Check(s.ok() && scan.valid_end <= size);
  // As a checkpoint file, read to its end or its first error.
  std::unique_ptr<CheckpointReader> r;
  if (CheckpointReader::Open(StringSource(std::string(in)), size, "fuzz", &r).ok()) {
    std::vector<repl::SnapshotWrite> chunk;
    bool done = false;
    for (size_t i = 0; i <= size && !done; i++) {
      if (!r->Next(&chunk, &done).ok()) break;
    }
  }
  // Every record decoder on the raw bytes.
  for (uint8_t t = 1; t <= kMaxFrameType; t++) DecodeRecord(static_cast<FrameType>(t), in);
  return 0;
}
