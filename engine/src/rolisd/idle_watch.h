// A watch that cancels a gRPC call which makes no progress for `idle`. A
// state transfer's snapshot streams for as long as the store takes to send
// (docs/replication.md, "Members that lose their memory"): a bound on the
// whole call would refuse every store bigger than what fits in it, so the
// bound is on the time between two chunks instead.
#pragma once

#include <grpcpp/client_context.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace rolis::replication {

class IdleWatch {
 public:
  using Clock = std::chrono::steady_clock;

  IdleWatch(grpc::ClientContext* ctx, std::chrono::milliseconds idle);
  ~IdleWatch();  // stops watching
  IdleWatch(const IdleWatch&) = delete;
  IdleWatch& operator=(const IdleWatch&) = delete;

  // The call moved (a chunk came): the idle time starts again.
  void Progress();
  // Whether the watch cancelled the call.
  bool fired() const;

 private:
  void Run();

  grpc::ClientContext* const ctx_;
  const std::chrono::milliseconds idle_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Clock::time_point last_;
  bool done_ = false;
  bool fired_ = false;
  std::thread thread_;  // last: started once the fields above are set
};

}  // namespace rolis::replication
