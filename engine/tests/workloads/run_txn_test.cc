// RunTxn, the retry loop every workload transaction runs in: conflict aborts
// are retried and counted, an application rollback is not a conflict, and
// any other error ends the transaction.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "workloads/workload.h"

namespace rolis::workloads {
namespace {

// A worker whose transactions fail Commit with kAborted `commit_aborts`
// times, then commit. Counts what happened to them.
struct ScriptedWorker : Worker {
  int commit_aborts = 0;
  int begun = 0, begun_read_only = 0, committed = 0, aborted = 0;

  struct Txn : Transaction {
    ScriptedWorker* w;
    bool ro;
    bool done = false;
    Txn(ScriptedWorker* worker, bool read_only) : w(worker), ro(read_only) {}
    Status Get(Table*, std::string_view, std::string*) override { return Status::OK(); }
    Status Scan(Table*, std::string_view, std::string_view, size_t, const ScanVisitor&) override {
      return Status::OK();
    }
    Status Put(Table*, std::string_view, std::string_view) override { return Status::OK(); }
    Status Insert(Table*, std::string_view, std::string_view) override { return Status::OK(); }
    Status Delete(Table*, std::string_view) override { return Status::OK(); }
    Status Commit() override {
      done = true;
      if (w->commit_aborts > 0) {
        --w->commit_aborts;
        ++w->aborted;
        return Status::Aborted("scripted conflict");
      }
      ++w->committed;
      return Status::OK();
    }
    void Abort() override {
      if (!done) ++w->aborted;
      done = true;
    }
    uint64_t commit_ts() const override { return 0; }
    bool read_only() const override { return ro; }
  };

  WorkerId id() const override { return 0; }
  std::unique_ptr<Transaction> Begin() override {
    ++begun;
    return std::make_unique<Txn>(this, false);
  }
  std::unique_ptr<Transaction> BeginReadOnly() override {
    ++begun_read_only;
    return std::make_unique<Txn>(this, true);
  }
  void Quiesce() override {}
};

TEST(RunTxn, RetriesConflictAbortsUntilCommitAndCountsThem) {
  ScriptedWorker worker;
  worker.commit_aborts = 3;
  WorkerContext ctx(&worker, 0, 1, 1);
  int bodies = 0;
  TxnOutcome out = RunTxn(ctx, 7, false, [&](Transaction&, bool*) {
    ++bodies;
    return Status::OK();
  });
  EXPECT_TRUE(out.error.ok());
  EXPECT_TRUE(out.committed);
  EXPECT_EQ(out.type, 7u);
  EXPECT_EQ(out.conflict_aborts, 3u);
  EXPECT_EQ(bodies, 4);
  EXPECT_EQ(worker.begun, 4);
  EXPECT_EQ(worker.committed, 1);
}

TEST(RunTxn, AbortedFromTheBodyIsRetriedToo) {
  ScriptedWorker worker;
  WorkerContext ctx(&worker, 0, 1, 1);
  int bodies = 0;
  TxnOutcome out = RunTxn(ctx, 0, false, [&](Transaction&, bool*) {
    return ++bodies < 3 ? Status::Aborted("conflict seen early") : Status::OK();
  });
  EXPECT_TRUE(out.committed);
  EXPECT_EQ(out.conflict_aborts, 2u);
  EXPECT_EQ(worker.aborted, 2);
}

TEST(RunTxn, ApplicationRollbackAbortsOnceAndIsNotAConflict) {
  ScriptedWorker worker;
  WorkerContext ctx(&worker, 0, 1, 1);
  TxnOutcome out = RunTxn(ctx, 0, false, [&](Transaction&, bool* rollback) {
    *rollback = true;
    return Status::OK();
  });
  EXPECT_TRUE(out.error.ok());
  EXPECT_FALSE(out.committed);
  EXPECT_EQ(out.conflict_aborts, 0u);
  EXPECT_EQ(worker.aborted, 1);
  EXPECT_EQ(worker.committed, 0);
}

TEST(RunTxn, OtherErrorsEndTheTransactionWithoutRetry) {
  ScriptedWorker worker;
  WorkerContext ctx(&worker, 0, 1, 1);
  int bodies = 0;
  TxnOutcome out = RunTxn(ctx, 0, true, [&](Transaction&, bool*) {
    ++bodies;
    return Status::Internal("bug");
  });
  EXPECT_EQ(out.error.code(), StatusCode::kInternal);
  EXPECT_FALSE(out.committed);
  EXPECT_EQ(bodies, 1);
  EXPECT_EQ(worker.begun_read_only, 1);
  EXPECT_EQ(worker.aborted, 1);
}

}  // namespace
}  // namespace rolis::workloads
