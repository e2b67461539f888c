// The leader's side of one (peer, worker stream) link of GrpcTransport: a
// writer thread over a bounded queue of accepts, and a reader thread for the
// replies while a connection is up: the peer's accept stream
// (accept_stream.h) when it told its port, else gRPC's Replicate call. A
// broken connection is a link reset (the leader resends). Internal to
// grpc_transport.cc.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "rolis/thread_name.h"
#include "accept_stream.h"
#include "grpc_transport.h"

namespace rolis::replication {

class GrpcTransport::Sender {
 public:
  Sender(GrpcTransport* t, uint32_t peer, uint32_t stream) : t_(t), peer_(peer), stream_(stream) {}
  ~Sender() { Stop(); }

  void Start() {
    writer_ = std::thread([this] {
      // rolis-send-P.S: to peer P, stream S (the control stream is the last).
      NameThisThread("rolis-send-" + std::to_string(peer_) + "." + std::to_string(stream_));
      Run();
    });
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
      if (ctx_) ctx_->TryCancel();
      if (conn_) conn_->Shutdown();
    }
    cv_.notify_all();
    if (writer_.joinable()) writer_.join();
  }
  void Push(const AcceptMsg& m) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (q_.size() >= t_->o_.queue_limit) q_.pop_front();  // the leader resends what is lost
      q_.push_back(m);
    }
    cv_.notify_one();
  }
  size_t Queued() const {
    std::lock_guard<std::mutex> g(mu_);
    return q_.size();
  }

 private:
  void Run();
  // One Replicate call, until it breaks or the sender stops. True when a
  // reply came.
  bool OneCall();
  // One accept stream connection, until it breaks or the sender stops.
  // True when a reply came.
  bool OneConnection(uint16_t port);
  void Deliver(const v1::AcceptResponse& resp);
  // Writes what is queued, with the test faults, until a write fails, the
  // reader ends or the sender stops. `write(m, copies)` sends m copies times.
  template <typename Write>
  void WriteUntilBroken(const std::atomic<bool>& reader_done, Write write);

  GrpcTransport* t_;
  uint32_t peer_, stream_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<AcceptMsg> q_;
  uint64_t rng_seed_ = 0;
  std::mt19937_64 rng_;
  grpc::ClientContext* ctx_ = nullptr;   // the call up, if any
  std::shared_ptr<FrameConn> conn_;      // or the accept stream connection
  uint64_t dial_failures_ = 0;
  bool on_stream_ = false;  // the last connection was an accept stream's
  bool stream_plaintext_ = false;  // and it was plaintext (--tls-accept-plaintext fallback)
  bool stop_ = false;
  std::thread writer_;
};


}  // namespace rolis::replication
