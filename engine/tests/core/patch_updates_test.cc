// Patches (rolis/value_patch.h, Options::patch_updates): the runs rebuild
// the value exactly and a bad patch is refused; the commit hook gets an
// update as a patch only against the same worker's own write of the same
// replication epoch; replaying the hooked writes, each worker's in order
// and the workers' streams merged in any order, rebuilds the leader's
// store; and replay refuses a patch against any other value, changing
// nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rolis/value_patch.h"
#include "test_util.h"

namespace rolis {
namespace {

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(ValuePatch, RunsRebuildTheValueAndRespectTheirBudget) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const size_t n = rng() % 700;
    const std::string base = RandomBytes(rng, n);
    std::string value = base;
    const int flips = static_cast<int>(rng() % 6);
    for (int f = 0; f < flips && n > 0; ++f) value[rng() % n] ^= static_cast<char>(1 + rng() % 255);
    std::string patch = "prefix";
    ASSERT_TRUE(AppendPatch(base, value, n + 64, &patch)) << n;
    const std::string runs = patch.substr(6);
    EXPECT_TRUE(PatchWellFormed(runs));
    EXPECT_LE(runs.size(), static_cast<size_t>(flips) * (4 + 8));  // a word per changed byte at most
    if (value == base) {
      EXPECT_TRUE(runs.empty());
    }
    std::string rebuilt = base;
    ASSERT_TRUE(ApplyPatch(runs, rebuilt.data(), rebuilt.size()));
    EXPECT_EQ(rebuilt, value);
  }
  // Over budget, of another length, or too long: no patch, output untouched.
  const std::string a(64, 'a');
  const std::string b(64, 'b');
  std::string out = "keep";
  EXPECT_FALSE(AppendPatch(a, b, 32, &out));
  EXPECT_FALSE(AppendPatch(a, a + "x", 1000, &out));
  const std::string big(kMaxPatchedValue + 1, 'z');
  EXPECT_FALSE(AppendPatch(big, big, 1000, &out));
  EXPECT_EQ(out, "keep");
}

// The patch by its definition, a word at a time: the runs of differing
// 8-byte words, then the tail bytes as one run if they differ.
bool PatchByDefinition(std::string_view base, std::string_view value, size_t max_bytes, std::string* out) {
  std::string runs;
  auto put = [&](size_t at, size_t len) {
    const uint16_t h[2] = {static_cast<uint16_t>(at), static_cast<uint16_t>(len)};
    runs.append(reinterpret_cast<const char*>(h), sizeof h);
    runs.append(value.substr(at, len));
  };
  const size_t words_end = value.size() & ~size_t{7};
  for (size_t i = 0; i < words_end;) {
    if (base.substr(i, 8) == value.substr(i, 8)) {
      i += 8;
      continue;
    }
    size_t j = i + 8;
    while (j < words_end && base.substr(j, 8) != value.substr(j, 8)) j += 8;
    put(i, j - i);
    i = j;
  }
  if (base.substr(words_end) != value.substr(words_end)) put(words_end, value.size() - words_end);
  if (runs.size() > max_bytes) return false;
  *out += runs;
  return true;
}

TEST(ValuePatch, RunsAreTheDefinitionsAcrossBlocksLengthsAndBudgets) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const size_t n = rng() % 2 ? rng() % 300 : rng() % 2100;
    const std::string base = RandomBytes(rng, n);
    std::string value = base;
    // Changed words alone, in stretches (runs across 64-byte blocks), or all.
    switch (rng() % 4) {
      case 0:
        for (int f = static_cast<int>(rng() % 8); f > 0 && n > 0; --f) value[rng() % n] ^= 1;
        break;
      case 1:
        for (int f = static_cast<int>(rng() % 3); f > 0 && n > 0; --f) {
          const size_t from = rng() % n, len = std::min<size_t>(n - from, rng() % 200);
          for (size_t k = from; k < from + len; ++k) value[k] = static_cast<char>(~value[k]);
        }
        break;
      case 2: value = RandomBytes(rng, n); break;
      default: break;
    }
    const size_t budget = rng() % (n + 80);
    std::string got = "prefix", want = "prefix";
    const bool fits = PatchByDefinition(base, value, budget, &want);
    ASSERT_EQ(AppendPatch(base, value, budget, &got), fits) << "length " << n << " budget " << budget;
    ASSERT_EQ(got, want) << "length " << n << " budget " << budget;
  }
}

TEST(ValuePatch, MalformedOrMisfittingPatchesAreRefused) {
  auto run = [](uint16_t off, uint16_t len, char c) {
    std::string s(4, '\0');
    std::memcpy(s.data(), &off, 2);
    std::memcpy(s.data() + 2, &len, 2);
    return s + std::string(len, c);
  };
  EXPECT_TRUE(PatchWellFormed(run(0, 3, 'x') + run(8, 2, 'y')));
  EXPECT_FALSE(PatchWellFormed(run(0, 3, 'x').substr(0, 5)));          // cut short
  EXPECT_FALSE(PatchWellFormed(run(0, 3, 'x') + "ab"));                 // a header cut short
  EXPECT_FALSE(PatchWellFormed(run(0, 0, 'x')));                        // empty run
  EXPECT_FALSE(PatchWellFormed(run(4, 4, 'x') + run(6, 2, 'y')));       // overlapping
  EXPECT_FALSE(PatchWellFormed(run(8, 2, 'x') + run(0, 2, 'y')));       // out of order
  std::string value(10, '.');
  EXPECT_FALSE(ApplyPatch(run(2, 3, 'x') + run(9, 2, 'y'), value.data(), value.size()));  // past the end
  EXPECT_EQ(value, std::string(10, '.'));  // the run that fitted was not applied either
}

struct Hooked {
  WorkerId worker;
  uint64_t ts;
  std::vector<WriteRecord> writes;  // views into `bytes`
  std::deque<std::string> bytes;
};

class KeepingHook : public CommitHook {
 public:
  void OnCommit(WorkerId worker, uint64_t ts, const CommittedWrites& writes) override {
    std::lock_guard<std::mutex> g(mu);
    Hooked& h = txns.emplace_back();
    h.worker = worker;
    h.ts = ts;
    for (WriteRecord w : writes.records()) {
      w.key = h.bytes.emplace_back(w.key);
      w.value = h.bytes.emplace_back(w.value);
      h.writes.push_back(w);
    }
  }
  std::mutex mu;
  std::deque<Hooked> txns;
};

std::unique_ptr<Database> OpenWithPatches(CommitHook* hook) {
  Options o;
  o.epoch_period_ms = 2;
  o.commit_hook = hook;
  o.patch_updates = true;
  return Database::Open(o);
}

// A patching database in replication epoch 1 with table "t", and the last
// write its hook saw.
struct PatchingDb {
  PatchingDb() { db->SetReplicationEpoch(1); }
  const WriteRecord& last() const { return hook.txns.back().writes.at(0); }
  KeepingHook hook;
  std::unique_ptr<Database> db = OpenWithPatches(&hook);
  Table* t = testing::MakeTable(db.get(), "t");
};

// Every key and value of table t, read at a snapshot that includes
// everything w wrote or replayed.
std::map<std::string, std::string> ReadAll(Database* db, Worker* w, Table* t) {
  testing::WaitForSnapshot(db, w);
  std::map<std::string, std::string> all;
  auto ro = w->BeginReadOnly();
  EXPECT_TRUE(ro->Scan(t, "", "", 0, [&](std::string_view k, std::string_view v) {
                  all[std::string(k)] = std::string(v);
                  return true;
                }).ok());
  EXPECT_TRUE(ro->Commit().ok());
  return all;
}

TEST(PatchUpdates, OnlyAnUpdateOfTheWorkersOwnWriteInThisEpochIsAPatch) {
  PatchingDb p;
  auto& db = p.db;
  Table* t = p.t;
  auto& hook = p.hook;
  auto last = [&] { return p.last(); };
  auto w1 = db->RegisterWorker();
  auto w2 = db->RegisterWorker();

  ASSERT_TRUE(testing::PutOne(w1.get(), t, "k", testing::Row('a', 1)).ok());
  EXPECT_FALSE(last().is_patch) << "an insert";
  ASSERT_TRUE(testing::PutOne(w1.get(), t, "k", testing::Row('a', 2)).ok());
  ASSERT_TRUE(last().is_patch) << "the worker's own write, 4 bytes changed";
  EXPECT_EQ(last().base_ts, hook.txns[hook.txns.size() - 2].ts) << "made against the version before it";
  EXPECT_LT(last().value.size(), 20u);
  ASSERT_TRUE(testing::PutOne(w1.get(), t, "k", testing::Row('b', 3)).ok());
  EXPECT_FALSE(last().is_patch) << "more than half of the value changed";
  ASSERT_TRUE(testing::PutOne(w1.get(), t, "k", testing::Row('b', 4) + "x").ok());
  EXPECT_FALSE(last().is_patch) << "another length";
  ASSERT_TRUE(testing::PutOne(w2.get(), t, "k", testing::Row('b', 5) + "x").ok());
  EXPECT_FALSE(last().is_patch) << "another worker's write";
  ASSERT_TRUE(testing::PutOne(w2.get(), t, "k", testing::Row('b', 6) + "x").ok());
  EXPECT_TRUE(last().is_patch);
  db->SetReplicationEpoch(2);
  ASSERT_TRUE(testing::PutOne(w2.get(), t, "k", testing::Row('b', 7) + "x").ok());
  EXPECT_FALSE(last().is_patch) << "written in an earlier replication epoch";
  ASSERT_TRUE(testing::RunRw(w2.get(), [&](Transaction* txn) { return txn->Delete(t, "k"); }).ok());
  EXPECT_FALSE(last().is_patch) << "a delete";
  EXPECT_TRUE(last().is_delete);
  ASSERT_TRUE(testing::PutOne(w2.get(), t, "k", testing::Row('b', 8) + "x").ok());
  EXPECT_FALSE(last().is_patch) << "over a delete";
}

// A patch carries its base's 8-byte ts: a small value goes whole, since no
// patch of it could be smaller (YCSB++'s 8-byte counters).
TEST(PatchUpdates, ASmallValueIsSentWholeAndABudgetLeavesThePatchSmaller) {
  EXPECT_EQ(PatchBudget(8), 0u);
  EXPECT_EQ(PatchBudget(13), 0u);
  EXPECT_EQ(PatchBudget(14), 5u);  // one changed byte: 8 + 5 = 13 < 14
  EXPECT_EQ(PatchBudget(120), 60u);
  EXPECT_EQ(PatchBudget(kMaxPatchedValue + 1), 0u);
  for (size_t len = 1; len <= 200; len++) {
    if (PatchBudget(len) > 0) {
      EXPECT_LT(8 + PatchBudget(len), len + 0u) << len;
    }
  }

  PatchingDb p;
  Table* t = p.t;
  auto w = p.db->RegisterWorker();
  auto last = [&] { return p.last(); };
  ASSERT_TRUE(testing::PutOne(w.get(), t, "k", std::string(8, 'a')).ok());
  ASSERT_TRUE(testing::PutOne(w.get(), t, "k", std::string(7, 'a') + "b").ok());
  EXPECT_FALSE(last().is_patch) << "an 8-byte value";
  EXPECT_EQ(last().value, std::string(7, 'a') + "b");
  // 24 bytes, its first word changed: a run of 4 + 8 bytes, 8 + 12 < 24.
  ASSERT_TRUE(testing::PutOne(w.get(), t, "k", std::string(24, 'a')).ok());
  EXPECT_FALSE(last().is_patch) << "written at another length before";
  ASSERT_TRUE(testing::PutOne(w.get(), t, "k", "b" + std::string(23, 'a')).ok());
  EXPECT_TRUE(last().is_patch) << "24 bytes, one word changed";
  EXPECT_EQ(last().value.size(), 12u);
}

// An Update of a value the transaction read (GetView) names the bytes it
// changes: its patch is their 8-byte words, found without comparing the
// values (so even bytes rewritten unchanged go as a run), unless they
// exceed the budget or a Put replaced the value in the same transaction,
// when the comparison decides as for a Put. So it does for an Update of a
// key not read first.
TEST(PatchUpdates, AnUpdateIsAPatchOfTheWordsItNames) {
  PatchingDb p;
  Table* t = p.t;
  auto w = p.db->RegisterWorker();
  auto last = [&] { return p.last(); };
  auto update = [&](size_t offset, std::string_view bytes) {
    return testing::RunRw(w.get(), [&](Transaction* txn) {
      std::string_view read;
      Status s = txn->GetView(t, "k", &read);
      return s.ok() ? txn->Update(t, "k", offset, bytes) : s;
    });
  };
  std::string row = testing::Row('a', 1);  // 120 bytes
  ASSERT_TRUE(testing::PutOne(w.get(), t, "k", row).ok());

  ASSERT_TRUE(update(10, "xyz").ok());
  row.replace(10, 3, "xyz");
  ASSERT_TRUE(last().is_patch);
  EXPECT_EQ(last().value, std::string("\x08\x00\x08\x00", 4) + row.substr(8, 8)) << "the word at 8, whole";

  ASSERT_TRUE(update(20, row.substr(20, 9)).ok());
  ASSERT_TRUE(last().is_patch) << "the same bytes: still the words named";
  EXPECT_EQ(last().value, std::string("\x10\x00\x10\x00", 4) + row.substr(16, 16));
  ASSERT_TRUE(testing::PutOne(w.get(), t, "k", row).ok());
  EXPECT_FALSE(last().is_patch) << "a Put of the same row: no runs, sent whole";
  ASSERT_TRUE(testing::RunRw(w.get(), [&](Transaction* txn) { return txn->Update(t, "k", 20, row.substr(20, 9)); }).ok());
  EXPECT_FALSE(last().is_patch) << "an Update of a key not read first: compared, no runs";

  // Two updates in one transaction: the words from the first to the last.
  ASSERT_TRUE(testing::RunRw(w.get(), [&](Transaction* txn) {
                std::string_view read;
                Status s = txn->GetView(t, "k", &read);
                if (s.ok()) s = txn->Update(t, "k", 40, "1");
                return s.ok() ? txn->Update(t, "k", 60, "2") : s;
              }).ok());
  row[40] = '1';
  row[60] = '2';
  ASSERT_TRUE(last().is_patch);
  EXPECT_EQ(last().value, std::string("\x28\x00\x18\x00", 4) + row.substr(40, 24));

  // 120 bytes named, one changed: past the budget, so compared.
  std::string changed = row;
  changed[100] = '3';
  ASSERT_TRUE(update(0, changed).ok());
  row = changed;
  ASSERT_TRUE(last().is_patch);
  EXPECT_EQ(last().value, std::string("\x60\x00\x08\x00", 4) + row.substr(96, 8));

  // Put, then Update, in one transaction: compared (a single changed word).
  ASSERT_TRUE(testing::RunRw(w.get(), [&](Transaction* txn) {
                Status s = txn->Put(t, "k", row);
                return s.ok() ? txn->Update(t, "k", 0, "4") : s;
              }).ok());
  row[0] = '4';
  ASSERT_TRUE(last().is_patch);
  EXPECT_EQ(last().value, std::string("\x00\x00\x08\x00", 4) + row.substr(0, 8));
  ASSERT_TRUE(testing::RunRw(w.get(), [&](Transaction* txn) {
                Status s = txn->Put(t, "k", row);
                return s.ok() ? txn->Update(t, "k", 64, row.substr(64, 8)) : s;
              }).ok());
  EXPECT_FALSE(last().is_patch) << "after a Put of the same row: no runs, sent whole";
  // Update, then Put, in one transaction: the Put's value, compared.
  changed = row;
  changed[110] = '6';
  ASSERT_TRUE(testing::RunRw(w.get(), [&](Transaction* txn) {
                std::string_view read;
                Status s = txn->GetView(t, "k", &read);
                if (s.ok()) s = txn->Update(t, "k", 0, "5");
                return s.ok() ? txn->Put(t, "k", changed) : s;
              }).ok());
  row = changed;
  ASSERT_TRUE(last().is_patch);
  EXPECT_EQ(last().value, std::string("\x68\x00\x08\x00", 4) + row.substr(104, 8));
}

// Several workers update shared rows (a few bytes each, so most updates
// are patches; by Put, or by Update of the bytes changed); a follower replays each worker's transactions in order,
// the workers' streams merged at random, and ends with the same store.
TEST(PatchUpdates, ReplayOfEachStreamInOrderRebuildsTheStoreWhateverTheMerge) {
  KeepingHook hook;
  auto leader = OpenWithPatches(&hook);
  leader->SetReplicationEpoch(3);
  Table* t = testing::MakeTable(leader.get(), "t");
  constexpr int kWorkers = 3, kTxns = 1500, kKeys = 40;
  std::vector<std::thread> threads;
  for (int id = 0; id < kWorkers; ++id) {
    threads.emplace_back([&, id] {
      auto w = leader->RegisterWorker();
      std::mt19937_64 rng(id + 100);
      for (int i = 0; i < kTxns; ++i) {
        Status s = testing::RunRw(w.get(), [&](Transaction* txn) {
          for (int j = 0; j < 2; ++j) {
            const std::string k = testing::KeyU64(rng() % kKeys);
            // Read as a view: an Update of it names the words it changes.
            std::string_view read;
            Status g = txn->GetView(t, k, &read);
            std::string v(read);
            if (g.IsNotFound() || v.size() != 120) v = testing::Row('0' + id, 0);
            else if (!g.ok()) return g;
            const size_t at = rng() % v.size();
            const char c = static_cast<char>('a' + rng() % 26);
            if (g.ok() && rng() % 2 == 0) {
              // Bytes around the change, some of them rewritten unchanged.
              const size_t from = at - std::min<size_t>(at, rng() % 12);
              v[at] = c;
              if (Status u = txn->Update(t, k, from, std::string_view(v).substr(from, 1 + rng() % 24)); !u.ok()) {
                return u;
              }
              continue;
            }
            v[at] = c;
            if (rng() % 50 == 0) v = RandomBytes(rng, 120);  // a full rewrite now and then
            if (Status p = txn->Put(t, k, v); !p.ok()) return p;
          }
          return Status::OK();
        });
        ASSERT_TRUE(s.ok()) << s.ToString();
      }
      w.reset();
    });
  }
  for (auto& th : threads) th.join();

  std::map<WorkerId, std::vector<const Hooked*>> streams;
  size_t patches = 0, writes = 0;
  for (const Hooked& h : hook.txns) {
    streams[h.worker].push_back(&h);
    for (const WriteRecord& w : h.writes) patches += w.is_patch, writes++;
  }
  EXPECT_GT(patches, writes / 3) << "most updates should go as patches";

  const std::map<std::string, std::string> want = ReadAll(leader.get(), leader->RegisterWorker().get(), t);
  for (int merge = 0; merge < 3; ++merge) {
    auto follower = testing::OpenDb();
    Table* ft = testing::MakeTable(follower.get(), "t");
    ASSERT_EQ(ft->id(), t->id());
    auto fw = follower->RegisterWorker();
    std::mt19937_64 rng(merge);
    std::map<WorkerId, size_t> next;
    for (size_t left = hook.txns.size(); left > 0; --left) {
      std::vector<WorkerId> ready;
      for (auto& [worker, txns] : streams) {
        if (next[worker] < txns.size()) ready.push_back(worker);
      }
      const WorkerId pick = ready[rng() % ready.size()];
      const Hooked* h = streams[pick][next[pick]++];
      std::vector<ReplicatedWrite> rws;
      for (const WriteRecord& w : h->writes) rws.push_back({w, 3, h->ts});
      Status s = follower->ApplyReplicatedBatch(fw.get(), rws);
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
    EXPECT_EQ(ReadAll(follower.get(), fw.get(), ft), want) << "merge " << merge;
  }
}

// Random transactions of GetView, Get, Put, Update (in range and not),
// Insert and Delete on a few keys, against a model: every call's status
// and the committed values agree with it, a refused Update changes
// nothing, and a follower replaying the hooked writes ends with the
// leader's store.
TEST(PatchUpdates, RandomMixesOfUpdatesAndOtherWritesAgreeWithAModelAndReplay) {
  PatchingDb p;
  auto w = p.db->RegisterWorker();
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(11);
  constexpr int kKeys = 6;
  int updates = 0, refused = 0;
  for (int i = 0; i < 2000; ++i) {
    auto txn = w->Begin();
    std::map<std::string, std::string> mine = model;
    const int ops = 1 + static_cast<int>(rng() % 6);
    for (int j = 0; j < ops; ++j) {
      const std::string k = testing::KeyU64(rng() % kKeys);
      const auto it = mine.find(k);
      const bool present = it != mine.end();
      // Often the length it has: a Put of it may then go as a patch.
      const std::string value = RandomBytes(rng, present && rng() % 2 ? it->second.size() : 16 + rng() % 100);
      switch (rng() % 6) {
        case 0: {
          std::string_view v;
          Status s = txn->GetView(p.t, k, &v);
          ASSERT_EQ(s.ok(), present) << s.ToString();
          if (present) ASSERT_EQ(v, it->second);
          break;
        }
        case 1: {
          std::string v;
          ASSERT_EQ(txn->Get(p.t, k, &v).ok(), present);
          break;
        }
        case 2:
          ASSERT_TRUE(txn->Put(p.t, k, value).ok());
          mine[k] = value;
          break;
        case 3:
        case 4: {
          const size_t len = present ? it->second.size() : 0;
          const size_t offset = rng() % (len + 8), n = rng() % 24;
          std::string_view read;
          if (rng() % 2 == 0) ASSERT_EQ(txn->GetView(p.t, k, &read).ok(), present);  // the words named
          const std::string bytes = RandomBytes(rng, n);
          Status s = txn->Update(p.t, k, offset, bytes);
          if (!present) {
            ASSERT_TRUE(s.IsNotFound()) << s.ToString();
          } else if (offset + n > len) {
            ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
            refused++;
          } else {
            ASSERT_TRUE(s.ok()) << s.ToString();
            it->second.replace(offset, n, bytes);
            updates++;
          }
          break;
        }
        default:
          if (present) {
            ASSERT_TRUE(txn->Delete(p.t, k).ok());
            mine.erase(k);
          } else {
            ASSERT_TRUE(txn->Insert(p.t, k, value).ok());
            mine[k] = value;
          }
      }
    }
    ASSERT_TRUE(txn->Commit().ok());  // one worker: nothing conflicts
    model = std::move(mine);
  }
  EXPECT_GT(updates, 500);
  EXPECT_GT(refused, 50);
  size_t patches = 0;
  for (const Hooked& h : p.hook.txns) {
    for (const WriteRecord& wr : h.writes) patches += wr.is_patch;
  }
  EXPECT_GT(patches, 300u);

  auto follower = testing::OpenDb();
  Table* ft = testing::MakeTable(follower.get(), "t");
  auto fw = follower->RegisterWorker();
  for (const Hooked& h : p.hook.txns) {
    std::vector<ReplicatedWrite> rws;
    for (const WriteRecord& wr : h.writes) rws.push_back({wr, 1, h.ts});
    Status s = follower->ApplyReplicatedBatch(fw.get(), rws);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_EQ(ReadAll(p.db.get(), w.get(), p.t), model) << "the leader";
  EXPECT_EQ(ReadAll(follower.get(), fw.get(), ft), model) << "the follower";
}

TEST(PatchUpdates, ReplayAppliesAPatchOnlyToTheVersionItWasMadeAgainst) {
  auto db = testing::OpenDb();
  Table* t = testing::MakeTable(db.get(), "t");
  auto w = db->RegisterWorker();
  const std::string base = testing::Row('a', 1);
  std::string patch;
  ASSERT_TRUE(AppendPatch(base, testing::Row('a', 2), 60, &patch));
  auto put = [&](const std::string& key, const std::string& v, uint64_t epoch, uint64_t ts) {
    return db->ApplyReplicated(w.get(), WriteRecord{t->id(), key, v}, epoch, ts);
  };
  auto apply = [&](const std::string& key, uint64_t epoch, uint64_t base_ts, uint64_t ts, std::string_view runs) {
    WriteRecord wr{t->id(), key, runs, false, true, base_ts};
    return db->ApplyReplicated(w.get(), wr, epoch, ts);
  };
  auto value_of = [&](const std::string& key) {
    testing::WaitForSnapshot(db.get(), w.get());
    std::string v;
    auto ro = w->BeginReadOnly();
    Status s = ro->Get(t, key, &v);
    (void)ro->Commit();
    return s.ok() ? v : "<" + s.ToString() + ">";
  };

  // No record, or one below the base (the base never arrived): refused,
  // nothing changes.
  EXPECT_EQ(apply("absent", 2, 20, 21, patch).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(value_of("absent").substr(0, 1), "<");
  ASSERT_TRUE(put("k", testing::Row('z', 9), 2, 10).ok());
  EXPECT_EQ(apply("k", 2, 20, 21, patch).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(value_of("k"), testing::Row('z', 9));
  ASSERT_TRUE(put("old", base, 1, 500).ok());
  EXPECT_EQ(apply("old", 2, 20, 21, patch).code(), StatusCode::kFailedPrecondition) << "an earlier epoch is below";
  // A malformed patch is refused before anything is looked up.
  EXPECT_EQ(apply("k", 2, 10, 22, "\x01\x00").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(value_of("k"), testing::Row('z', 9));
  // On its base, it applies; an older patch is skipped (last writer wins).
  ASSERT_TRUE(put("k", base, 2, 20).ok());
  EXPECT_TRUE(apply("k", 2, 20, 21, patch).ok());
  EXPECT_EQ(value_of("k"), testing::Row('a', 2));
  EXPECT_TRUE(apply("k", 2, 3, 5, patch).ok());
  EXPECT_EQ(value_of("k"), testing::Row('a', 2));
  // A state transfer installs the base under the snapshot's key, above the
  // base's own and below the patch: it applies there too.
  ASSERT_TRUE(put("s", base, 2, 30).ok());
  EXPECT_TRUE(apply("s", 2, 25, 31, patch).ok());
  EXPECT_EQ(value_of("s"), testing::Row('a', 2));
}

}  // namespace
}  // namespace rolis
