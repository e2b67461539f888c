// Retwis: TAPIR's mix (about 4 gets and 2 puts per transaction, half of them
// read-only get-timelines), and the puts land (a put of a key it read adds 1,
// a blind one writes 1: the table sums to at most the puts, and to more than
// nothing).
#include "workloads/retwis.h"

#include <gtest/gtest.h>

#include "small_workload_run.h"
#include "workloads/u64_table.h"

namespace rolis::workloads {
namespace {

TEST(Retwis, MixAveragesFourGetsAndTwoPutsAndNoPutIsLost) {
  RetwisConfig c;
  c.keys = 10000;
  Retwis retwis(c);
  auto db = OpenAndLoad(retwis);

  std::unique_ptr<Worker> w = db->RegisterWorker();
  WorkerContext ctx(w.get(), 0, 1, 5);
  retwis.InitThread(ctx);
  TxnRequest req;
  double gets = 0, puts = 0, timelines = 0;
  constexpr int kN = 100000;
  for (int i = 0; i < kN; ++i) {
    retwis.Generate(ctx, &req);
    gets += static_cast<double>(req.params[0]);
    puts += Retwis::Puts(req.type);
    timelines += req.read_only;
  }
  EXPECT_NEAR(gets / kN, 4.0, 0.05);
  EXPECT_NEAR(puts / kN, 1.95, 0.05);
  EXPECT_NEAR(timelines / kN, 0.5, 0.01);
  w.reset();

  bench::RunResult r = RunFixed(db.get(), retwis, 5000);
  uint64_t want = 0;
  for (uint32_t t = 0; t < 4; ++t) want += Retwis::Puts(t) * r.types[t].commits;
  Table* table = nullptr;
  ASSERT_TRUE(db->GetTable("retwis", &table).ok());
  int64_t sum = 0;
  ASSERT_TRUE(SumU64Table(db.get(), table, c.keys, &sum).ok());
  EXPECT_LE(sum, static_cast<int64_t>(want));
  EXPECT_GT(sum, static_cast<int64_t>(want / 4));
}

}  // namespace
}  // namespace rolis::workloads
