// Prefaulted memory (rolis/prefault.h): more than the process may use fails
// with a clear error and changes nothing; after a prefault the engine
// grows without page faults (the allocator serves it from that memory);
// a second prefault in the process is refused. One test: the allocator,
// and so the prefault, is the process's.
#include "rolis/prefault.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>

#include "test_util.h"

namespace rolis {
namespace {

long MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Minor page faults taken while `rows` records of 200 bytes go into `t`.
long FaultsOfInserting(Database* db, Table* t, uint64_t first, uint64_t rows) {
  auto w = db->RegisterWorker();
  const std::string value(200, 'v');
  const long before = MinorFaults();
  for (uint64_t i = first; i < first + rows; i += 100) {
    Status s = testing::RunRw(w.get(), [&](Transaction* txn) {
      for (uint64_t k = i; k < i + 100; k++) {
        if (Status p = txn->Put(t, testing::KeyU64(k), value); !p.ok()) return p;
      }
      return Status::OK();
    });
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return MinorFaults() - before;
}

TEST(PrefaultTest, ImpossibleSizeFailsThenPrefaultedMemoryGrowsTheEngineWithoutPageFaults) {
  // 2^45 bytes (32 TiB): more than any test machine has.
  Status big = PrefaultMemory(size_t{1} << 45);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(PrefaultedBytes(), 0u);
  if (!PrefaultSupported()) {
    // The system allocator cannot take the memory: refused, and says why.
    Status s = PrefaultMemory(64 << 20);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(s.message().find("--prefault-memory"), std::string::npos) << s.message();
    return;
  }
  EXPECT_NE(big.message().find("available to this process"), std::string::npos) << big.message();

  auto db = testing::OpenDb();
  constexpr uint64_t kRows = 100000;  // ~30 MiB of records and index
  const long without = FaultsOfInserting(db.get(), testing::MakeTable(db.get(), "before"), 0, kRows);

  size_t reported = 0;
  ASSERT_TRUE(PrefaultMemory(100 << 20, /*huge_pages=*/false, [&](size_t done, size_t total) {
                EXPECT_LE(done, total);
                reported = done;
              }).ok());
  EXPECT_EQ(PrefaultedBytes(), size_t{128} << 20);  // rounded up to kPrefaultUnit
  EXPECT_EQ(reported, PrefaultedBytes());           // the last report is the whole
  const long with = FaultsOfInserting(db.get(), testing::MakeTable(db.get(), "after"), kRows, kRows);
  std::printf("minor faults inserting %lu rows: %ld before the prefault, %ld after\n",
              static_cast<unsigned long>(kRows), without, with);
  // Without it the same rows fault in thousands of pages (one per 4 KiB).
  EXPECT_GT(without, 2000);
  EXPECT_LT(with * 10, without) << "faults with prefaulted memory " << with << ", without " << without;

  Status again = PrefaultMemory(64 << 20);
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(PrefaultedBytes(), size_t{128} << 20);
}

}  // namespace
}  // namespace rolis
