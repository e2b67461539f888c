// The fuzz entry of the durable decoders (engine/fuzz/durable_decode_fuzz.cc)
// over its seed corpus and a bounded number of random mutations of it, so
// that ctest covers it without clang. With ROLIS_WRITE_CORPUS=<dir> set, the
// test also (re)writes the seed files there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "checkpoint.h"
#include "frame.h"
#include "record_codec.h"
#include "test_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace rolis::durability {
namespace {

namespace fs = std::filesystem;
using replication::Decided;

int RunEntry(const std::string& in) { return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(in.data()), in.size()); }

std::map<std::string, std::string> Seeds() {
  auto d = std::make_shared<Decided>();
  d->record.epoch = 4;
  d->record.cut = {{2, 30}, {3, 12}};
  d->leader_id = 3;
  d->watermark = {3, 12};
  d->config = 1;
  d->members = {{1, "rolis-0.rolis:7000"}, {2, "rolis-1.rolis:7000"}, {3, "rolis-2.rolis:7000"}};
  replication::Slot slot = TestSlot(17, 4, 64);
  replication::ControlVote vote{4, 0x0203, 0x0203, d};
  replication::SnapshotReply h;
  h.at = {4, 99};
  h.next_slot = {3, 8};
  h.skip = {0, 2};
  h.stream_key = {{4, 90}, {4, 99}};
  h.stream_barrier = {4, 4};
  h.decided = d;
  h.leader_epoch = 4;
  std::string chunk;
  BeginWritesChunk(&chunk);
  AddToWritesChunk(&chunk, 0, "user1", "field0=abc");
  AddToWritesChunk(&chunk, 2, "k", "");
  FinishWritesChunk(&chunk, 2);

  std::map<std::string, std::string> seeds;
  std::string seg;
  AppendFrame(&seg, FrameType::kFileHeader, EncodeFileHeader(FileHeader{FileKind::kSegment, 1, 17}));
  for (uint64_t i = 17; i < 20; i++) {
    replication::Slot s = TestSlot(i, 4, 40);
    AppendFrame(&seg, FrameType::kSlot, EncodeSlotMeta(1, s) + s.value->payload);
  }
  seeds["segment"] = seg;
  seeds["segment_torn"] = seg.substr(0, seg.size() - 11);
  std::string journal;
  AppendFrame(&journal, FrameType::kFileHeader, EncodeFileHeader(FileHeader{FileKind::kJournal, 0, 0}));
  AppendFrame(&journal, FrameType::kPromise, EncodePromise(5));
  AppendFrame(&journal, FrameType::kDecided, EncodeDecided(*d));
  AppendFrame(&journal, FrameType::kControlVote, EncodeControlVote(vote));
  seeds["journal"] = journal;
  std::string ckpt;
  AppendFrame(&ckpt, FrameType::kFileHeader, EncodeFileHeader(FileHeader{FileKind::kCheckpoint, 0, 0}));
  AppendFrame(&ckpt, FrameType::kCheckpointHeader, EncodeCheckpointHeader(h));
  AppendFrame(&ckpt, FrameType::kCheckpointWrites, chunk);
  AppendFrame(&ckpt, FrameType::kCheckpointEnd, EncodeCheckpointEnd({2, 1}));
  seeds["checkpoint"] = ckpt;
  seeds["raw_slot"] = EncodeSlotMeta(0, slot) + slot.value->payload;
  seeds["raw_decided"] = EncodeDecided(*d);
  seeds["raw_control_vote"] = EncodeControlVote(vote);
  seeds["raw_checkpoint_header"] = EncodeCheckpointHeader(h);
  seeds["raw_writes_chunk"] = chunk;
  return seeds;
}

std::vector<std::string> ReadCorpus() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(ROLIS_DURABLE_DECODE_CORPUS)) {
    std::ifstream f(e.path(), std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return out;
}

TEST(DurableDecodeFuzz, TheSeedCorpusIsCurrentAndRuns) {
  if (const char* dir = std::getenv("ROLIS_WRITE_CORPUS")) {
    for (const auto& [name, bytes] : Seeds()) std::ofstream(fs::path(dir) / name, std::ios::binary) << bytes;
  }
  // The corpus in the repository is what the encoders write today.
  std::vector<std::string> corpus = ReadCorpus();
  std::set<std::string> have(corpus.begin(), corpus.end());
  for (const auto& [name, bytes] : Seeds()) EXPECT_TRUE(have.count(bytes)) << name << " is missing or stale";
  for (const std::string& in : corpus) EXPECT_EQ(RunEntry(in), 0);
}

// Random mutations of the seeds: bit flips, truncations, insertions, large
// lengths written over fields, and splices of two seeds. A decoder that
// crashes, aborts (a non-canonical round trip) or allocates without bound
// fails the test.
TEST(DurableDecodeFuzz, BoundedRandomMutations) {
  std::vector<std::string> corpus = ReadCorpus();
  ASSERT_GE(corpus.size(), 8u);
  std::mt19937_64 rng(20240537);
  auto pick = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  const int rounds = 30000;
  for (int i = 0; i < rounds; i++) {
    std::string in = corpus[pick(corpus.size())];
    int edits = 1 + static_cast<int>(pick(4));
    for (int k = 0; k < edits; k++) {
      switch (pick(6)) {
        case 0:
          if (!in.empty()) in[pick(in.size())] ^= static_cast<char>(1u << pick(8));
          break;
        case 1:
          in.resize(pick(in.size() + 1));
          break;
        case 2:
          in.insert(pick(in.size() + 1), std::string(1 + pick(8), static_cast<char>(rng())));
          break;
        case 3:
          if (in.size() >= 4) {
            uint32_t big = static_cast<uint32_t>(rng()) | 0x01000000u;
            size_t at = pick(in.size() - 3);
            for (int b = 0; b < 4; b++) in[at + b] = static_cast<char>(big >> (8 * b));
          }
          break;
        case 4: {
          const std::string& other = corpus[pick(corpus.size())];
          in = in.substr(0, pick(in.size() + 1)) + other.substr(pick(other.size() + 1));
          break;
        }
        case 5:
          if (!in.empty()) in.erase(pick(in.size()), 1 + pick(4));
          break;
      }
    }
    ASSERT_EQ(RunEntry(in), 0);
  }
}

}  // namespace
}  // namespace rolis::durability
