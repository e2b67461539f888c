#include "baselines/two_phase_locking.h"

#include <algorithm>

namespace rolis::baselines {

using workloads::TxnOutcome;

TwoPhaseLocking::TwoPhaseLocking(uint32_t threads, TwoPhaseLockingHooks hooks) : hooks_(std::move(hooks)) {
  for (uint32_t t = 0; t < threads; ++t) per_.push_back(std::make_unique<PerThread>());
}

TxnOutcome TwoPhaseLocking::RunOne(workloads::WorkerContext& ctx, workloads::Workload* workload) {
  const uint32_t t = ctx.index;
  PerThread& me = *per_[t];
  workload->Generate(ctx, &me.req);
  const uint64_t ts = next_ts_.fetch_add(1, std::memory_order_relaxed);  // kept across restarts
  uint32_t deaths = 0, restarts = 0;
  for (;;) {
    LockSlots(me);
    bool paused = false;
    auto pause = [&] {
      if (!paused && hooks_.pause) hooks_.pause(t);
      paused = true;
    };
    for (;;) {
      size_t held = 0;
      bool died = false;
      for (const auto& [slot, write] : me.slots) {
        if (!locks_.Acquire(slot, write, ts, pause)) {
          died = true;
          break;
        }
        ++held;
      }
      if (!died) break;
      for (size_t i = 0; i < held; ++i) locks_.Release(me.slots[i].first, me.slots[i].second);
      ++deaths;
      deaths_.fetch_add(1, std::memory_order_relaxed);
      pause();
      workloads::BackoffAfterAbort(ctx.rng, deaths);
    }
    if (paused && hooks_.resume) hooks_.resume(t);

    TxnOutcome out = workload->Execute(ctx, me.req);
    if (out.error.ok() && out.set_changed) {
      // Its reconnaissance was out of date: it wrote nothing; locks go, the
      // set is computed again and the transaction restarts (same ts).
      for (const auto& [slot, write] : me.slots) locks_.Release(slot, write);
      ++restarts;
      restarts_.fetch_add(1, std::memory_order_relaxed);
      workload->Reconnoiter(ctx, &me.req);
      continue;
    }
    if (out.error.ok() && out.committed && out.commit_ts != 0 && hooks_.wait_replicated) {
      out.error = hooks_.wait_replicated(t, out.commit_ts);
    }
    for (const auto& [slot, write] : me.slots) locks_.Release(slot, write);
    out.conflict_aborts += deaths + restarts;
    return out;
  }
}

void TwoPhaseLocking::LockSlots(PerThread& me) {
  me.slots.clear();
  for (const workloads::LockKey& k : me.req.keys) me.slots.emplace_back(locks_.SlotOf(k.hash), k.write);
  std::sort(me.slots.begin(), me.slots.end());
  size_t n = 0;  // one entry per slot; a write wins
  for (size_t i = 0; i < me.slots.size(); ++i) {
    if (n > 0 && me.slots[n - 1].first == me.slots[i].first) {
      me.slots[n - 1].second = me.slots[n - 1].second || me.slots[i].second;
    } else {
      me.slots[n++] = me.slots[i];
    }
  }
  me.slots.resize(n);
}

}  // namespace rolis::baselines
