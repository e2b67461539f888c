#include "watermark_waiters.h"

namespace rolis::replication {

void WatermarkWaiters::Add(uint64_t ts, WatermarkWaiter* w) {
  std::lock_guard<std::mutex> g(mu_);
  if (!open_->load(std::memory_order_acquire)) {
    failed_.push_back({w, "this member is not the open leader"});
  } else {
    waiting_.push(Waiter{ts, w});
  }
}

bool WatermarkWaiters::empty() const {
  std::lock_guard<std::mutex> g(mu_);
  return waiting_.empty();
}

void WatermarkWaiters::FailAll(const std::string& why) {
  std::lock_guard<std::mutex> g(mu_);
  while (!waiting_.empty()) {
    failed_.push_back({waiting_.top().w, why});
    waiting_.pop();
  }
}

void WatermarkWaiters::Complete() {
  std::vector<WatermarkWaiter*> done;
  std::vector<std::pair<WatermarkWaiter*, std::string>> failed;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (open_->load(std::memory_order_acquire)) {
      uint64_t covered = covered_ts_->load(std::memory_order_acquire);
      while (!waiting_.empty() && waiting_.top().ts <= covered) {
        done.push_back(waiting_.top().w);
        waiting_.pop();
      }
    } else {
      while (!waiting_.empty()) {
        failed_.push_back({waiting_.top().w, "this member stopped leading before replication acknowledged it"});
        waiting_.pop();
      }
    }
    failed.swap(failed_);
  }
  for (WatermarkWaiter* w : done) w->Done(true, "");
  for (auto& [w, why] : failed) w->Done(false, why);
}

}  // namespace rolis::replication
