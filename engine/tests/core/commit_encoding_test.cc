// The engine hands its commit hook each transaction in two forms
// (CommittedWrites): as records, and already encoded for the replication
// log, straight from the write set. The two must agree byte for byte:
// encoded() is what followers replay, records() what the codec's encoder
// (rolis/txn_encoding.h) turns into the same bytes. Covered: puts of every
// short length (the encoder's inline copies), inserts, deletes, patches
// (Options::patch_updates; found by comparing, or named by an Update), keys
// up to the limit, and transactions larger
// than the worker's first encoding scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <string>

#include "rolis/txn_encoding.h"
#include "test_util.h"

namespace rolis {
namespace {

class ComparingHook final : public CommitHook {
 public:
  void OnCommit(WorkerId, uint64_t ts, const CommittedWrites& writes) override {
    // Alternate which form is built first: each is built when first asked
    // for, and neither may depend on the other having been built.
    const bool encoded_first = (txns_ % 2) == 0;
    std::string_view encoded;
    if (encoded_first) encoded = writes.encoded();
    const std::span<const WriteRecord> records = writes.records();
    if (!encoded_first) encoded = writes.encoded();
    std::string want;
    txn_encoding::AppendTxn(&want, ts, records);
    if (encoded != want) mismatches_++;
    if (records.size() != writes.size()) mismatches_++;
    if (encoded != writes.encoded()) mismatches_++;  // asked again: the same bytes
    txns_++;
    max_bytes_ = std::max(max_bytes_, want.size());
    for (const WriteRecord& w : records) {
      patches_ += w.is_patch;
      deletes_ += w.is_delete;
    }
  }
  uint64_t txns_ = 0, mismatches_ = 0, patches_ = 0, deletes_ = 0;
  size_t max_bytes_ = 0;
};

TEST(CommitEncoding, EncodedEqualsTheEncodingOfTheRecords) {
  ComparingHook hook;
  Options o;
  o.epoch_period_ms = 2;
  o.commit_hook = &hook;
  o.patch_updates = true;
  auto db = Database::Open(o);
  Table* t = testing::MakeTable(db.get(), "t");
  Table* u = testing::MakeTable(db.get(), "u");
  auto w = db->RegisterWorker();
  std::mt19937_64 rng(7);
  const std::string long_key(o.limits.max_key_bytes, 'k');
  const std::string big(60000, 'v');
  uint64_t with_writes = 0;  // a transaction whose deletes all missed has none: not hooked
  for (uint32_t i = 0; i < 600; ++i) {
    auto txn = w->Begin();
    bool wrote = false;
    const uint32_t n = 1 + static_cast<uint32_t>(rng() % 6);
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t kind = static_cast<uint32_t>(rng() % 6);
      const std::string key = testing::KeyU64(rng() % 40);
      std::string v;
      wrote = wrote || kind != 2 || txn->Get(t, key, &v).ok();
      if (kind == 0) {
        ASSERT_TRUE(txn->Put(t, key, std::string(rng() % 41, static_cast<char>('a' + j))).ok());
      } else if (kind == 1) {  // an update of a row this worker wrote: a patch
        std::string_view row;
        if (rng() % 2 == 0 && txn->GetView(u, key, &row).ok() && row.size() > 8) {
          ASSERT_TRUE(txn->Update(u, key, rng() % (row.size() - 8), "upd").ok());  // the words it names
        } else {
          ASSERT_TRUE(txn->Put(u, key, testing::Row('r', i)).ok());
        }
      } else if (kind == 2) {
        if (txn->Get(t, key, &v).ok()) {
          ASSERT_TRUE(txn->Delete(t, key).ok());
        }
      } else if (kind == 3) {
        ASSERT_TRUE(txn->Put(t, long_key.substr(0, 1 + rng() % long_key.size()), "long").ok());
      } else if (kind == 4 && i % 50 == 0) {
        ASSERT_TRUE(txn->Put(u, "big" + key, big).ok());
      } else {
        ASSERT_TRUE(txn->Put(u, key + "-new" + std::to_string(i), "inserted").ok());
      }
    }
    ASSERT_TRUE(txn->Commit().ok());
    with_writes += wrote;
  }
  EXPECT_EQ(hook.txns_, with_writes);
  EXPECT_EQ(hook.mismatches_, 0u);
  // The run covered what it means to.
  EXPECT_GT(hook.patches_, 100u);
  EXPECT_GT(hook.deletes_, 20u);
  EXPECT_GT(hook.max_bytes_, size_t{4096});
}

}  // namespace
}  // namespace rolis
