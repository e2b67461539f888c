// Calls to every member at once (the fan-out of Promise and Control), this
// member included through its own handler. A call returns once the replies
// so far are enough for the caller; the calls still running go on in the
// background until their deadline, and Drain waits for them (Stop).
//
// Keeps no protocol invariant itself: the callers count the replies
// (majorities, newer records). Lock order: background_mu_ is a leaf; no
// other lock of the Replica is needed while it is held, and callers should
// hold none of theirs while a fan-out waits (the replies come from other
// members' handlers, and this member's own).
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <utility>
#include <vector>

#include "member_state.h"
#include "transport.h"

namespace rolis::replication {

class MemberCalls {
 public:
  template <typename Reply>
  using Replies = std::vector<std::pair<uint32_t, Reply>>;
  template <typename Reply>
  using Enough = std::function<bool(const Replies<Reply>&)>;

  // `self` answers this member's own share of the calls.
  MemberCalls(MemberState* member, Transport* transport, ReplicaHandler* self, std::chrono::milliseconds rpc_timeout)
      : member_(member), transport_(transport), self_(self), rpc_timeout_(rpc_timeout) {}

  // Promise to every member this one knows (itself first if include_self).
  // Returns once `enough` holds for the replies so far (null: wait for all).
  Replies<PromiseReply> PromiseAll(const PromiseMsg& m, bool include_self,
                                   const Enough<PromiseReply>& enough = nullptr);
  // Control to every member, itself first.
  Replies<ControlReply> ControlAll(const ControlMsg& m, const Enough<ControlReply>& enough = nullptr);

  // Waits for every call still running (each ends by its deadline).
  void Drain();

 private:
  template <typename Reply, typename Call>
  Replies<Reply> FanOut(Replies<Reply> initial, Call call, const Enough<Reply>& enough);

  MemberState* const member_;
  Transport* const transport_;
  ReplicaHandler* const self_;
  const std::chrono::milliseconds rpc_timeout_;
  std::mutex background_mu_;
  std::vector<std::future<void>> background_;  // calls still running
};

}  // namespace rolis::replication
