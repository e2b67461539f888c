#include "server/procedures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <random>
#include <thread>

#include "workloads/bank.h"
#include "workloads/hash_table.h"
#include "workloads/retwis.h"
#include "workloads/tpca.h"
#include "workloads/tpcc.h"
#include "workloads/tpcc_check.h"
#include "workloads/u64_table.h"
#include "workloads/ycsb.h"

namespace rolis::server {

using namespace workloads;  // NOLINT: the workloads this file serves
using grpc::StatusCode;
using W = ProcWorkload;
using K = ProcKind;

namespace {

constexpr Procedure kProcedures[] = {
    // name, workload, kind, transaction type, min and max args, read-only; the args in the comment
    {"ycsbpp.setup", W::kYcsbpp, K::kSetup, 0, 1, 1, false},  // [keys]
    {"ycsbpp.load", W::kYcsbpp, K::kLoad, 0, 1, 1, false},
    {"ycsbpp.read", W::kYcsbpp, K::kTxn, kYcsbReadOnly, 1, 16, true},  // [record...]
    {"ycsbpp.rmw", W::kYcsbpp, K::kTxn, kYcsbReadModifyWrite, 1, 16, false},
    {"bank.setup", W::kBank, K::kSetup, 0, 2, 2, false},  // [accounts, initial]
    {"bank.load", W::kBank, K::kLoad, 0, 1, 1, false},
    {"bank.transfer", W::kBank, K::kTxn, kBankTransfer, 3, 3, false},  // [from, to, amount]
    {"bank.audit", W::kBank, K::kCheck, kBankAudit, 0, 0, true},
    {"hash.setup", W::kHash, K::kSetup, 0, 1, 1, false},  // [elements]
    {"hash.load", W::kHash, K::kLoad, 0, 1, 1, false},
    {"hash.get", W::kHash, K::kTxn, kHashGets, 1, 1, true},                              // [first]
    {"hash.update", W::kHash, K::kTxn, kHashGetsAndPuts, 2, TxnRequest::kMaxParams, false},  // [element...]
    {"retwis.setup", W::kRetwis, K::kSetup, 0, 1, 1, false},  // [keys]
    {"retwis.load", W::kRetwis, K::kLoad, 0, 1, 1, false},
    {"retwis.add_user", W::kRetwis, K::kTxn, kRetwisAddUser, 3, 3, false},  // [key...]
    {"retwis.follow", W::kRetwis, K::kTxn, kRetwisFollow, 2, 2, false},
    {"retwis.post_tweet", W::kRetwis, K::kTxn, kRetwisPostTweet, 5, 5, false},
    {"retwis.get_timeline", W::kRetwis, K::kTxn, kRetwisGetTimeline, 1, 10, true},
    {"tpca.setup", W::kTpca, K::kSetup, 0, 3, 3, false},  // [branches, tellers/branch, accounts/branch]
    {"tpca.load", W::kTpca, K::kLoad, 0, 1, 1, false},
    {"tpca.txn", W::kTpca, K::kTxn, 0, 5, 5, false},  // [branch, teller, account, history, delta]
    {"tpca.check", W::kTpca, K::kCheck, 0, 0, 0, true},
    {"tpcc.setup", W::kTpcc, K::kSetup, 0, 1, 5, false},  // [warehouses, items, districts, customers, new orders]
    {"tpcc.load", W::kTpcc, K::kLoad, 0, 1, 1, false},
    {"tpcc.new_order", W::kTpcc, K::kTxn, kNewOrder, 2, 2, false},  // [home warehouse, seed]
    {"tpcc.payment", W::kTpcc, K::kTxn, kPayment, 2, 2, false},
    {"tpcc.order_status", W::kTpcc, K::kTxn, kOrderStatus, 2, 2, true},
    {"tpcc.delivery", W::kTpcc, K::kTxn, kDelivery, 2, 2, false},
    {"tpcc.stock_level", W::kTpcc, K::kTxn, kStockLevel, 2, 2, true},
    {"tpcc.check", W::kTpcc, K::kCheck, 0, 0, 0, true},
};

constexpr std::string_view kWorkloadNames[] = {"ycsbpp", "bank", "hash", "retwis", "tpca", "tpcc"};
static_assert(std::size(kWorkloadNames) == static_cast<size_t>(W::kCount));

constexpr uint64_t kRowsPerPart = 1000;         // rows of a load part of the key-value workloads
constexpr uint32_t kTpccItemsPerPart = 10000;  // TPC-C items per load part (then one part per warehouse)
constexpr uint64_t kMaxRows = 100'000'000;

grpc::Status Invalid(std::string msg) { return grpc::Status(StatusCode::INVALID_ARGUMENT, std::move(msg)); }

grpc::Status FromEngine(const Status& s) {
  switch (s.code()) {
    case rolis::StatusCode::kOk: return grpc::Status::OK;
    case rolis::StatusCode::kAborted: return grpc::Status(StatusCode::ABORTED, "conflict: " + s.message());
    case rolis::StatusCode::kInvalidArgument: return Invalid(s.message());
    case rolis::StatusCode::kNotFound:
      return grpc::Status(StatusCode::FAILED_PRECONDITION, "a row the procedure needs is missing (is the workload "
                                                           "loaded?): " + s.message());
    case rolis::StatusCode::kAlreadyExists:
      return grpc::Status(StatusCode::FAILED_PRECONDITION, "already loaded: " + s.message());
    case rolis::StatusCode::kFailedPrecondition: return grpc::Status(StatusCode::FAILED_PRECONDITION, s.message());
    case rolis::StatusCode::kResourceExhausted: return grpc::Status(StatusCode::RESOURCE_EXHAUSTED, s.message());
    default: return grpc::Status(StatusCode::INTERNAL, s.message());
  }
}

// Until the engine's snapshot covers the current epoch (or the timeout).
void WaitForSnapshot(Database* db, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const uint64_t epoch = db->Stats().current_epoch;
  while (std::chrono::steady_clock::now() < deadline && db->Stats().snapshot_epoch < epoch) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Every arg below `limit` and all distinct (at most kMaxParams of them).
grpc::Status DistinctBelow(std::span<const uint64_t> args, uint64_t limit, std::string_view what) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] >= limit) return Invalid(fmt::format("arg {}: {} {} is not below {}", i, what, args[i], limit));
    for (size_t j = 0; j < i; ++j) {
      if (args[j] == args[i]) return Invalid(fmt::format("args {} and {}: the same {} twice", j, i, what));
    }
  }
  return grpc::Status::OK;
}

// The sizes of a workload as .setup received them, with defaults filled in,
// checked, and the number of load parts.
grpc::Status CheckSizes(W w, std::vector<uint64_t>* sizes, uint64_t* parts) {
  std::vector<uint64_t>& s = *sizes;
  auto rows = [&](uint64_t n, uint64_t lo, std::string_view what) -> grpc::Status {
    if (n < lo || n > kMaxRows) return Invalid(fmt::format("{} must be in [{}, {}]", what, lo, kMaxRows));
    return grpc::Status::OK;
  };
  switch (w) {
    case W::kYcsbpp:
      *parts = CeilDiv(s[0], kRowsPerPart);
      return rows(s[0], 16, "keys");
    case W::kBank:
      *parts = CeilDiv(s[0], kRowsPerPart);
      if (s[1] > 1'000'000'000'000ULL) return Invalid("initial balance must be at most 10^12");
      return rows(s[0], 2, "accounts");
    case W::kHash:
      *parts = CeilDiv(s[0], kRowsPerPart);
      return rows(s[0], 100, "elements");
    case W::kRetwis:
      *parts = CeilDiv(s[0], kRowsPerPart);
      return rows(s[0], 10, "keys");
    case W::kTpca: {
      for (uint64_t v : s) {
        if (v == 0 || v > kMaxRows) return Invalid("tpca sizes must be in [1, 10^8]");
      }
      const uint64_t tellers = s[0] * s[1], accounts = s[0] * s[2];
      if (tellers > kMaxRows || accounts > kMaxRows) return Invalid("tpca: at most 10^8 tellers and accounts");
      *parts = CeilDiv(s[0], kRowsPerPart) + CeilDiv(tellers, kRowsPerPart) + CeilDiv(accounts, kRowsPerPart);
      return grpc::Status::OK;
    }
    case W::kTpcc: {
      const TpccConfig d;
      const uint64_t defaults[5] = {1, d.items, d.districts_per_warehouse, d.customers_per_district,
                                    d.new_orders_per_district};
      s.resize(5, 0);
      for (size_t i = 0; i < 5; ++i) {
        if (s[i] == 0) s[i] = defaults[i];
      }
      if (s[0] > tpcc::kMaxWarehouses || s[1] > 1'000'000 || s[2] > 255 || s[3] > 0xffff || s[4] > s[3]) {
        return Invalid("tpcc: want at most 65,535 warehouses, 10^6 items, 255 districts per warehouse, 65,535 "
                       "customers per district, and no more new orders than customers");
      }
      *parts = CeilDiv(s[1], kTpccItemsPerPart) + s[0];
      return grpc::Status::OK;
    }
    case W::kCount: break;
  }
  return Invalid("unknown workload");
}

std::unique_ptr<Workload> MakeWorkload(W w, const std::vector<uint64_t>& s) {
  switch (w) {
    case W::kYcsbpp: {
      YcsbConfig c;
      c.keys = s[0];
      return std::make_unique<Ycsbpp>(c);
    }
    case W::kBank: {
      BankConfig c;
      c.accounts = s[0];
      c.initial = static_cast<int64_t>(s[1]);
      return std::make_unique<Bank>(c);
    }
    case W::kHash: {
      HashTableConfig c;
      c.elements = s[0];
      return std::make_unique<HashTable>(c);
    }
    case W::kRetwis: {
      RetwisConfig c;
      c.keys = s[0];
      return std::make_unique<Retwis>(c);
    }
    case W::kTpca: {
      TpcaConfig c;
      c.branches = s[0];
      c.tellers_per_branch = s[1];
      c.accounts_per_branch = s[2];
      return std::make_unique<Tpca>(c);
    }
    case W::kTpcc: {
      TpccConfig c;
      c.warehouses = static_cast<uint32_t>(s[0]);
      c.items = static_cast<uint32_t>(s[1]);
      c.districts_per_warehouse = static_cast<uint32_t>(s[2]);
      c.customers_per_district = static_cast<uint32_t>(s[3]);
      c.new_orders_per_district = static_cast<uint32_t>(s[4]);
      return std::make_unique<Tpcc>(c);
    }
    case W::kCount: break;
  }
  return nullptr;
}

Status Attach(W w, Workload* wl, Database* db, const std::vector<uint64_t>& s) {
  // Every table under the reserved prefix: a user table of the same name
  // (--tables) stays the user's.
  constexpr std::string_view p = kBenchmarkTablePrefix;
  switch (w) {
    case W::kYcsbpp: return static_cast<Ycsbpp*>(wl)->Attach(db, p);
    case W::kBank: return static_cast<Bank*>(wl)->Attach(db, p);
    case W::kHash: return static_cast<HashTable*>(wl)->Attach(db, p);
    case W::kRetwis: return static_cast<Retwis*>(wl)->Attach(db, p);
    case W::kTpca: return static_cast<Tpca*>(wl)->Attach(db, p);
    case W::kTpcc: return static_cast<Tpcc*>(wl)->Attach(db, static_cast<uint32_t>(s.empty() ? 1 : s[0]), p);
    case W::kCount: break;
  }
  return Status::InvalidArgument("unknown workload");
}

// The default sizes every member creates the tables with (CreateTables).
std::vector<uint64_t> DefaultSizes(W w) {
  switch (w) {
    case W::kBank: return {10000, 1000};
    case W::kTpca: return {1, 1, 1};
    case W::kTpcc: return {1, 0, 0, 0, 0};
    default: return {1000};
  }
}

std::string EncodeSizes(const std::vector<uint64_t>& s) {
  std::string out(s.size() * 8, '\0');
  for (size_t i = 0; i < s.size(); ++i) StoreBigEndian64(out.data() + i * 8, s[i]);
  return out;
}

// Loads part `part` (below the parts CheckSizes counted) of workload w with
// sizes s on `worker`; *rows: the rows it wrote (TPC-C: 1 per warehouse).
Status LoadPart(W w, Workload* wl, const std::vector<uint64_t>& s, uint64_t part, Worker* worker, uint64_t* rows) {
  Status ls;
  auto range = [&](uint64_t n, uint64_t first_part, uint64_t* lo, uint64_t* hi) {
    *lo = (part - first_part) * kRowsPerPart;
    *hi = std::min(n, *lo + kRowsPerPart);
    *rows = *hi - *lo;
  };
  uint64_t lo = 0, hi = 0;
  switch (w) {
    case W::kYcsbpp:
      range(s[0], 0, &lo, &hi);
      ls = static_cast<Ycsbpp*>(wl)->LoadRange(worker, lo, hi);
      break;
    case W::kBank:
      range(s[0], 0, &lo, &hi);
      ls = LoadU64Range(worker, static_cast<Bank*>(wl)->table(), lo, hi, static_cast<int64_t>(s[1]));
      break;
    case W::kHash:
      range(s[0], 0, &lo, &hi);
      ls = LoadU64Range(worker, static_cast<HashTable*>(wl)->table(), lo, hi, 0);
      break;
    case W::kRetwis:
      range(s[0], 0, &lo, &hi);
      ls = LoadU64Range(worker, static_cast<Retwis*>(wl)->table(), lo, hi, 0);
      break;
    case W::kTpca: {
      auto* t = static_cast<Tpca*>(wl);
      const uint64_t n[3] = {s[0], s[0] * s[1], s[0] * s[2]};
      Table* tables[3] = {t->branch(), t->teller(), t->account()};
      uint64_t first = 0;
      for (int i = 0; i < 3; ++i) {
        const uint64_t count = CeilDiv(n[i], kRowsPerPart);
        if (part < first + count) {
          range(n[i], first, &lo, &hi);
          ls = LoadU64Range(worker, tables[i], lo, hi, 0);
          break;
        }
        first += count;
      }
      break;
    }
    case W::kTpcc: {
      auto* t = static_cast<Tpcc*>(wl);
      const uint64_t item_parts = CeilDiv(s[1], kTpccItemsPerPart);
      if (part < item_parts) {
        const auto ilo = static_cast<uint32_t>(part * kTpccItemsPerPart + 1);
        const auto ihi = static_cast<uint32_t>(std::min<uint64_t>(s[1], (part + 1) * kTpccItemsPerPart) + 1);
        *rows = ihi - ilo;
        ls = t->LoadItems(worker, ilo, ihi);
      } else {
        *rows = 1;  // a warehouse
        ls = t->LoadWarehouse(worker, static_cast<uint32_t>(part - item_parts + 1), 0);
      }
      break;
    }
    case W::kCount: break;
  }
  return ls;
}

// The args of transaction `p` against the workload's sizes s (their number
// is checked already).
grpc::Status CheckArgs(const Procedure& p, const std::vector<uint64_t>& s, std::span<const uint64_t> args) {
  grpc::Status st;
  switch (p.workload) {
    case W::kYcsbpp: st = DistinctBelow(args, s[0], "record"); break;
    case W::kBank:
      if (p.kind == K::kTxn) {
        st = DistinctBelow(args.subspan(0, 2), s[0], "account");
        if (st.ok() && args[2] > 1'000'000'000) st = Invalid("arg 2: amount above 10^9");
      }
      break;
    case W::kHash: st = DistinctBelow(args, s[0], "element"); break;
    case W::kRetwis: st = DistinctBelow(args, s[0], "key"); break;
    case W::kTpca: {
      const uint64_t limits[3] = {s[0], s[0] * s[1], s[0] * s[2]};
      const std::string_view what[3] = {"branch", "teller", "account"};
      for (int i = 0; i < 3 && st.ok(); ++i) {
        if (args[i] >= limits[i]) {
          st = Invalid(fmt::format("arg {}: {} {} is not below {}", i, what[i], args[i], limits[i]));
        }
      }
      const auto delta = static_cast<int64_t>(args[4]);
      if (st.ok() && (delta < -1'000'000 || delta > 1'000'000)) st = Invalid("arg 4: delta outside [-10^6, 10^6]");
      break;
    }
    case W::kTpcc:
      if (args[0] == 0 || args[0] > s[0]) {
        st = Invalid(fmt::format("arg 0: warehouse {} is not in [1, {}]", args[0], s[0]));
      }
      break;
    case W::kCount: break;
  }
  return st;
}

}  // namespace

const Procedure* FindProcedure(std::string_view name) {
  for (const Procedure& p : kProcedures) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::span<const Procedure> AllProcedures() { return kProcedures; }

bool ProcedureWrites(std::string_view name) {
  const Procedure* p = FindProcedure(name);
  return p == nullptr || !p->read_only;
}

// ---------------------------------------------------------------------------

struct ProcedureHost::Loaded {
  W workload;
  std::vector<uint64_t> sizes;
  uint64_t parts = 0;
  std::unique_ptr<Workload> impl;
};

// A worker's per-thread state of each workload, for the Loaded it was made for.
struct ProcedureHost::SlotState {
  struct PerWorkload {
    std::shared_ptr<Loaded> owner;
    std::unique_ptr<WorkerContext> ctx;
    TxnRequest req;
  };
  PerWorkload of[static_cast<size_t>(W::kCount)];
};

ProcedureHost::ProcedureHost(Database* db, size_t workers) : db_(db) {
  for (size_t i = 0; i < workers; ++i) slots_.push_back(std::make_unique<SlotState>());
}

ProcedureHost::~ProcedureHost() = default;

Status ProcedureHost::CreateTables(std::vector<std::string>* names) {
  // Tables are numbered from 0 in creation order: the new ones are the
  // names of the ids from the first free one on.
  TableId first = 0;
  for (Table* t = nullptr; db_->GetTable(first, &t).ok();) first++;
  Status s = CreateOrGetTable(db_, TableName(kBenchmarkTablePrefix, "procedures"), &meta_);
  for (size_t i = 0; s.ok() && i < static_cast<size_t>(W::kCount); ++i) {
    const W w = static_cast<W>(i);
    std::vector<uint64_t> sizes = DefaultSizes(w);
    std::unique_ptr<Workload> wl = MakeWorkload(w, sizes);
    s = Attach(w, wl.get(), db_, sizes);
  }
  for (TableId id = first; s.ok(); id++) {
    Table* t = nullptr;
    if (!db_->GetTable(id, &t).ok()) break;
    names->emplace_back(t->name());
  }
  return s;
}

std::shared_ptr<ProcedureHost::Loaded> ProcedureHost::Get(W w, Worker* worker, grpc::Status* st) {
  std::lock_guard<std::mutex> g(mu_);
  std::shared_ptr<Loaded>& slot = loaded_[static_cast<size_t>(w)];
  if (slot) return slot;
  // Set up by another member (an earlier leader): its sizes are in the table.
  const std::string_view name = kWorkloadNames[static_cast<size_t>(w)];
  std::string value;
  Status s;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::unique_ptr<Transaction> txn = worker->Begin();
    s = txn->Get(meta_, name, &value);
    if (s.ok()) s = txn->Commit();
    else txn->Abort();
    if (!s.IsAborted()) break;
  }
  if (s.IsNotFound()) {
    *st = grpc::Status(StatusCode::FAILED_PRECONDITION,
                       fmt::format("workload {} is not set up: call {}.setup and {}.load first (rolisctl bench "
                                   "--workload={} --load)", name, name, name, name));
    return nullptr;
  }
  if (!s.ok() || value.size() % 8 != 0 || value.empty()) {
    *st = s.ok() ? grpc::Status(StatusCode::INTERNAL, "the procedures table holds a malformed row") : FromEngine(s);
    return nullptr;
  }
  auto l = std::make_shared<Loaded>();
  l->workload = w;
  for (size_t i = 0; i < value.size(); i += 8) l->sizes.push_back(DecodeU64(value.data() + i));
  if (grpc::Status cs = CheckSizes(w, &l->sizes, &l->parts); !cs.ok()) {
    *st = grpc::Status(StatusCode::INTERNAL, "the procedures table holds bad sizes: " + cs.error_message());
    return nullptr;
  }
  l->impl = MakeWorkload(w, l->sizes);
  if (Status as = Attach(w, l->impl.get(), db_, l->sizes); !as.ok()) {
    *st = FromEngine(as);
    return nullptr;
  }
  slot = l;
  return l;
}

grpc::Status ProcedureHost::Setup(const Procedure& p, std::span<const uint64_t> args, Worker* worker,
                                  std::vector<int64_t>* output, ProcedureOutcome* out) {
  auto l = std::make_shared<Loaded>();
  l->workload = p.workload;
  l->sizes.assign(args.begin(), args.end());
  if (grpc::Status st = CheckSizes(p.workload, &l->sizes, &l->parts); !st.ok()) return st;
  l->impl = MakeWorkload(p.workload, l->sizes);
  if (Status s = Attach(p.workload, l->impl.get(), db_, l->sizes); !s.ok()) return FromEngine(s);
  const std::string value = EncodeSizes(l->sizes);
  const std::string_view name = kWorkloadNames[static_cast<size_t>(p.workload)];
  // The reply waits for the read fence (Node::CallProcedure: commit_ts 0),
  // which covers this put.
  // Set up again with the same sizes: nothing changes (a re-run's --load).
  // With other sizes the rows already loaded would not match them: refused.
  Status s = CommitBatch(worker, [&](Transaction& txn) {
    std::string existing;
    Status got = txn.Get(meta_, name, &existing);
    if (got.ok() && existing != value) {
      return Status::FailedPrecondition(fmt::format(
          "{} is already set up with other sizes; set it up with the same ones, or use a cluster without it", name));
    }
    if (!got.ok() && !got.IsNotFound()) return got;
    return txn.Put(meta_, name, value);
  });
  if (!s.ok()) return FromEngine(s);
  {
    std::lock_guard<std::mutex> g(mu_);
    loaded_[static_cast<size_t>(p.workload)] = l;
  }
  out->committed = true;
  output->push_back(static_cast<int64_t>(l->parts));
  return grpc::Status::OK;
}

grpc::Status ProcedureHost::Run(const Procedure& p, std::span<const uint64_t> args, Worker* worker, size_t slot,
                                std::vector<int64_t>* output, ProcedureOutcome* out) {
  if (args.size() < p.min_args || args.size() > p.max_args) {
    return Invalid(p.min_args == p.max_args
                       ? fmt::format("{} takes {} args, got {}", p.name, p.min_args, args.size())
                       : fmt::format("{} takes {} to {} args, got {}", p.name, p.min_args, p.max_args, args.size()));
  }
  if (p.kind == K::kSetup) return Setup(p, args, worker, output, out);
  grpc::Status st;
  std::shared_ptr<Loaded> l = Get(p.workload, worker, &st);
  if (!l) return st;
  const std::vector<uint64_t>& s = l->sizes;
  Workload* wl = l->impl.get();

  if (p.kind == K::kLoad) {
    if (args[0] >= l->parts) return Invalid(fmt::format("part {} is not below the {} parts", args[0], l->parts));
    uint64_t rows = 0;
    if (Status ls = LoadPart(p.workload, wl, s, args[0], worker, &rows); !ls.ok()) return FromEngine(ls);
    out->committed = true;
    output->push_back(static_cast<int64_t>(rows));
    return grpc::Status::OK;
  }

  // Checks that read with a worker of their own, on one snapshot: it must
  // cover every commit so far (this worker quiesced: it does not hold the
  // snapshot back).
  if (p.kind == K::kCheck && p.workload != W::kBank) {
    worker->Quiesce();
    WaitForSnapshot(db_, std::chrono::seconds(5));
  }
  if (p.kind == K::kCheck && p.workload == W::kTpca) {
    if (Status cs = static_cast<Tpca*>(wl)->CheckConsistency(db_); !cs.ok()) return FromEngine(cs);
    out->committed = true;
    return grpc::Status::OK;
  }
  if (p.kind == K::kCheck && p.workload == W::kTpcc) {
    if (Status cs = CheckTpccConsistency(db_, *static_cast<Tpcc*>(wl)); !cs.ok()) return FromEngine(cs);
    out->committed = true;
    return grpc::Status::OK;
  }

  if (grpc::Status bad = CheckArgs(p, s, args); !bad.ok()) return bad;

  // This worker's state for this workload (made anew after a new setup).
  SlotState::PerWorkload& pw = slots_[slot]->of[static_cast<size_t>(p.workload)];
  if (pw.owner != l) {
    pw.ctx = std::make_unique<WorkerContext>(worker, static_cast<uint32_t>(slot), static_cast<uint32_t>(slots_.size()),
                                             std::random_device{}());
    pw.ctx->snapshot_reads = false;
    wl->InitThread(*pw.ctx);
    if (p.workload == W::kTpcc) {
      static_cast<Tpcc*>(wl)->SetHistorySequence(*pw.ctx, static_cast<uint32_t>(pw.ctx->rng.Next()));
    }
    pw.owner = l;
  }
  WorkerContext& ctx = *pw.ctx;
  TxnOutcome o;
  if (p.workload == W::kTpcc) {
    ctx.rng = Rng(args[1]);
    o = static_cast<Tpcc*>(wl)->RunType(ctx, p.type, static_cast<uint32_t>(args[0]));
  } else {
    TxnRequest& req = pw.req;
    req.Reset(p.type, p.read_only);
    if (p.workload == W::kRetwis) {
      // Gets first; a get-timeline reads every key it names.
      req.Param(p.type == kRetwisGetTimeline ? args.size() : Retwis::Gets(p.type, 0));
    }
    for (uint64_t a : args) req.Param(a);
    o = wl->Execute(ctx, req);
  }
  out->conflicts = o.conflict_aborts;
  if (!o.error.ok()) return FromEngine(o.error);
  out->committed = o.committed;
  out->commit_ts = o.commit_ts;
  if (p.kind == K::kCheck) {
    output->push_back(static_cast<Bank*>(wl)->expected_total());
  } else {
    output->push_back(o.committed ? 1 : 0);
    output->push_back(o.conflict_aborts);
  }
  return grpc::Status::OK;
}

}  // namespace rolis::server
