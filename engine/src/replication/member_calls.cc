#include "member_calls.h"

#include <algorithm>
#include <condition_variable>
#include <memory>

namespace rolis::replication {

template <typename Reply, typename Call>
MemberCalls::Replies<Reply> MemberCalls::FanOut(Replies<Reply> initial, Call call, const Enough<Reply>& enough) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    Replies<Reply> replies;
    size_t ended = 0;
  };
  const std::vector<uint32_t> peers = member_->peers();
  auto sh = std::make_shared<Shared>();
  sh->replies = std::move(initial);
  std::vector<std::future<void>> calls;
  for (uint32_t p : peers) {
    calls.push_back(std::async(std::launch::async, [sh, p, call] {
      Reply r;
      bool ok = call(p, &r);
      std::lock_guard<std::mutex> g(sh->mu);
      if (ok) sh->replies.push_back({p, std::move(r)});
      sh->ended++;
      sh->cv.notify_all();
    }));
  }
  Replies<Reply> out;
  {
    std::unique_lock<std::mutex> lk(sh->mu);
    sh->cv.wait(lk, [&] { return sh->ended == peers.size() || (enough && enough(sh->replies)); });
    out = sh->replies;
  }
  std::lock_guard<std::mutex> g(background_mu_);
  background_.erase(std::remove_if(background_.begin(), background_.end(),
                                   [](std::future<void>& f) {
                                     return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
                                   }),
                    background_.end());
  for (auto& f : calls) {
    if (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) background_.push_back(std::move(f));
  }
  return out;
}

MemberCalls::Replies<PromiseReply> MemberCalls::PromiseAll(const PromiseMsg& m, bool include_self,
                                                           const Enough<PromiseReply>& enough) {
  Replies<PromiseReply> initial;
  if (include_self) initial.push_back({member_->self(), self_->HandlePromise(m)});
  Transport* tr = transport_;
  auto timeout = rpc_timeout_;
  return FanOut<PromiseReply>(
      std::move(initial), [tr, m, timeout](uint32_t p, PromiseReply* r) { return tr->Promise(p, m, r, timeout).ok(); },
      enough);
}

MemberCalls::Replies<ControlReply> MemberCalls::ControlAll(const ControlMsg& m, const Enough<ControlReply>& enough) {
  Replies<ControlReply> initial;
  initial.push_back({member_->self(), self_->HandleControl(m)});
  Transport* tr = transport_;
  auto timeout = rpc_timeout_;
  return FanOut<ControlReply>(
      std::move(initial), [tr, m, timeout](uint32_t p, ControlReply* r) { return tr->Control(p, m, r, timeout).ok(); },
      enough);
}

void MemberCalls::Drain() {
  std::lock_guard<std::mutex> g(background_mu_);
  for (auto& f : background_) f.wait();
  background_.clear();
}

}  // namespace rolis::replication
