#include "workloads/retwis.h"

#include "workloads/u64_table.h"

namespace rolis::workloads {
namespace {

constexpr std::string_view kTypeNames[] = {"AddUser", "Follow", "PostTweet", "GetTimeline"};

struct RetwisThread : ThreadState {
  TxnRequest req;
};

}  // namespace

std::span<const std::string_view> Retwis::txn_types() const { return kTypeNames; }

uint32_t Retwis::Gets(uint32_t type, uint32_t timeline_gets) {
  switch (type) {
    case kRetwisAddUser: return 1;
    case kRetwisFollow: return 2;
    case kRetwisPostTweet: return 3;
    default: return timeline_gets;
  }
}

uint32_t Retwis::Puts(uint32_t type) {
  switch (type) {
    case kRetwisAddUser: return 3;
    case kRetwisFollow: return 2;
    case kRetwisPostTweet: return 5;
    default: return 0;
  }
}

Status Retwis::Load(Database* db, uint32_t threads) {
  if (!Zipf::ValidTheta(config_.zipf_theta)) return Status::InvalidArgument("retwis: zipf theta must be in [0, 1)");
  if (config_.keys < 10) return Status::InvalidArgument("retwis: want at least 10 keys");
  zipf_.emplace(config_.keys, config_.zipf_theta);
  return CreateU64Table(db, "retwis", config_.keys, 0, threads, &table_);
}

void Retwis::InitThread(WorkerContext& ctx) { ctx.state = std::make_unique<RetwisThread>(); }

TxnOutcome Retwis::RunOne(WorkerContext& ctx) {
  return GenerateAndExecute(*this, ctx, &static_cast<RetwisThread*>(ctx.state.get())->req);
}

// Params: the distinct keys, max(gets, puts) of them; the first `gets` are
// read, the first `puts` written.
void Retwis::Generate(WorkerContext& ctx, TxnRequest* req) {
  const uint64_t roll = ctx.rng.Uniform(100);
  const uint32_t type = roll < 5 ? kRetwisAddUser : roll < 20 ? kRetwisFollow : roll < 50 ? kRetwisPostTweet
                                                                                         : kRetwisGetTimeline;
  const uint32_t gets = Gets(type, 1 + static_cast<uint32_t>(ctx.rng.Uniform(10))), puts = Puts(type);
  const uint32_t n = gets > puts ? gets : puts;
  uint64_t keys[TxnRequest::kMaxParams];
  DrawDistinct(n, keys, [&] { return zipf_->Next(ctx.rng); });
  req->Reset(type, type == kRetwisGetTimeline);
  req->Param(gets);
  for (uint32_t i = 0; i < n; ++i) {
    req->Param(keys[i]);
    req->Key(table_->id(), U64Key(keys[i]).view(), i < puts);
  }
}

TxnOutcome Retwis::Execute(WorkerContext& ctx, const TxnRequest& req) {
  const uint32_t gets = static_cast<uint32_t>(req.params[0]), puts = Puts(req.type);
  const uint64_t* keys = req.params + 1;
  return RunTxn(ctx, req.type, req.read_only, [&](Transaction& txn, bool*) -> Status {
    int64_t values[TxnRequest::kMaxParams] = {};
    for (uint32_t i = 0; i < gets; ++i) {
      Status s = GetU64(txn, table_, keys[i], &values[i]);
      if (!s.ok()) return s;
    }
    for (uint32_t i = 0; i < puts; ++i) {
      Status s = PutU64(txn, table_, keys[i], values[i] + 1);
      if (!s.ok()) return s;
    }
    return Status::OK();
  });
}

}  // namespace rolis::workloads
