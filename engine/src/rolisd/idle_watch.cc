#include "idle_watch.h"

namespace rolis::replication {

IdleWatch::IdleWatch(grpc::ClientContext* ctx, std::chrono::milliseconds idle)
    : ctx_(ctx), idle_(idle), last_(Clock::now()), thread_([this] { Run(); }) {}

IdleWatch::~IdleWatch() {
  {
    std::lock_guard<std::mutex> g(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void IdleWatch::Progress() {
  std::lock_guard<std::mutex> g(mu_);
  last_ = Clock::now();
}

bool IdleWatch::fired() const {
  std::lock_guard<std::mutex> g(mu_);
  return fired_;
}

void IdleWatch::Run() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!done_) {
    const Clock::time_point deadline = last_ + idle_;
    if (Clock::now() >= deadline) {
      fired_ = true;
      ctx_->TryCancel();
      return;
    }
    cv_.wait_until(lk, deadline);
  }
}

}  // namespace rolis::replication
