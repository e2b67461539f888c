// Hash table: the declared sets are 100 reads or 8 reads with 2 writes, and
// every committed read-write transaction adds exactly 2 to the table's sum.
#include "workloads/hash_table.h"

#include <gtest/gtest.h>

#include "small_workload_run.h"
#include "workloads/u64_table.h"

namespace rolis::workloads {
namespace {

TEST(HashTable, DeclaredSetsAndNoLostPut) {
  HashTableConfig c;
  c.elements = 500;
  HashTable hash(c);
  auto db = OpenAndLoad(hash);

  std::unique_ptr<Worker> w = db->RegisterWorker();
  WorkerContext ctx(w.get(), 0, 1, 3);
  hash.InitThread(ctx);
  TxnRequest req;
  for (int i = 0; i < 200; ++i) {
    hash.Generate(ctx, &req);
    req.Normalize();
    size_t writes = 0;
    for (const LockKey& k : req.keys) writes += k.write;
    if (req.read_only) {
      EXPECT_EQ(req.keys.size(), 100u);
      EXPECT_EQ(writes, 0u);
    } else {
      EXPECT_EQ(req.keys.size(), 8u);
      EXPECT_EQ(writes, 2u);
    }
  }
  w.reset();

  bench::RunResult r = RunFixed(db.get(), hash, 4000);
  int64_t sum = 0;
  ASSERT_TRUE(SumU64Table(db.get(), hash.table(), c.elements, &sum).ok());
  EXPECT_EQ(sum, static_cast<int64_t>(2 * r.types[kHashGetsAndPuts].commits));
  EXPECT_GT(r.types[kHashGets].commits, 3000u);
}

}  // namespace
}  // namespace rolis::workloads
