// The replication transport of rolisd: per peer one gRPC channel, per
// (peer, worker stream) one long-lived link for accepts written by its own
// thread from a bounded queue (the leader's window keeps it short; beyond
// queue_limit the oldest accepts are dropped and resent by the leader): the
// peer's accept stream (accept_stream.h) once its Hello told the port, else
// a bidirectional Replicate call (stream_sender.h); unary calls for Promise,
// Control and Hello, a server-streaming call for Snapshot.
// ReplicationService and the accept stream's listener are the receiving side.
//
// For tests only, a file named by Options::drop_peers_file may list member
// ids ("2,3"): traffic to and from them is dropped in both directions (a
// partition of this member); and "loss=P dup=P seed=N": each accept this
// member sends is lost with probability P, or written twice. Re-read every
// 50 ms.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rolis/v1/replication.grpc.pb.h"
#include "accept_stream.h"
#include "server/authz.h"
#include "replication/transport.h"

namespace rolis::replication {

class GrpcTransport final : public Transport {
 public:
  struct Peer {
    uint32_t id = 0;
    std::string address;  // replication address host:port
  };
  struct Options {
    uint32_t self = 0;
    std::vector<Peer> peers;  // without this member
    uint32_t streams = 1;
    size_t queue_limit = 4096;
    int max_message_bytes = 512 << 20;
    std::string drop_peers_file;
    // How peers are dialed (peer_tls.h); null: plaintext.
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    // How accept stream connections are secured: set exactly when the
    // members use TLS (peer_tls.h); null members: plaintext.
    StreamSecurity security;
    // --tls-accept-plaintext: a peer that does not take TLS (it has not
    // moved to TLS yet, or has left it) is called in plaintext. Each call
    // and each accept stream connection tries TLS first while its channel
    // is not known to fail, so the member moves back to TLS as soon as the
    // peer takes it.
    bool plaintext_fallback = false;
  };
  explicit GrpcTransport(Options o);
  ~GrpcTransport() override;

  void Bind(ReplicaHandler* local) override { handler_.store(local); }
  void Start() override;
  void Stop() override;
  void SendAccept(uint32_t peer, const AcceptMsg& m) override;
  size_t Queued(uint32_t peer, uint32_t stream) const override;
  Status Promise(uint32_t peer, const PromiseMsg& m, PromiseReply* r, std::chrono::milliseconds timeout) override;
  Status Control(uint32_t peer, const ControlMsg& m, ControlReply* r, std::chrono::milliseconds timeout) override;
  Status Snapshot(uint32_t peer, const SnapshotMsg& m, SnapshotSink* sink, std::chrono::milliseconds timeout) override;
  Status Hello(uint32_t peer, const v1::Member& self, v1::Member* out, std::chrono::milliseconds timeout);
  // A member learned from a configuration (membership.h); no-op if known.
  void AddPeer(uint32_t id, const std::string& address) override;

  // The accept stream (accept_stream.h). This member listens at `port` (0:
  // any free port) and tells its peers the port it got in Hello; once a
  // peer's port is known, accepts to it go there instead of gRPC's
  // Replicate call. False with the reason in *error.
  bool ListenAcceptStream(uint16_t port, std::string* error);
  uint16_t accept_stream_port() const { return listener_ ? listener_->port() : 0; }
  size_t accept_stream_connections() const { return listener_ ? listener_->connections() : 0; }
  // What a peer said in Hello (0: none, or it failed: use gRPC).
  void SetAcceptStreamPort(uint32_t peer, uint16_t port);
  uint16_t AcceptStreamPortOf(uint32_t peer) const;
  std::string AddressOf(uint32_t peer) const;

  // One accept received on either path, answered in *resp when kReply.
  enum class Served { kReply, kDropped, kNotReady };
  Served ServeAccept(v1::AcceptRequest&& req, v1::AcceptResponse* resp);
  // The same, leaving the reply for SettleAccepts (*ref: what was taken).
  Served TakeAccept(v1::AcceptRequest&& req, AcceptReply* reply, AcceptedRef* ref);

  // The test knob: true when traffic with `peer` is dropped.
  bool Dropped(uint32_t peer) const {
    return peer < 64 && (drop_mask_.load(std::memory_order_relaxed) >> peer) & 1;
  }
  ReplicaHandler* handler() const { return handler_.load(); }
  uint32_t self() const { return o_.self; }
  uint32_t streams() const { return o_.streams; }

 private:
  class Sender;
  v1::Replication::Stub* StubOf(uint32_t peer) const;
  // One call to `peer` within `timeout`: `rpc` on its stub and a context
  // with the deadline set; "unavailable" when there is no route to it.
  Status Call(uint32_t peer, std::chrono::milliseconds timeout,
              const std::function<grpc::Status(v1::Replication::Stub*, grpc::ClientContext*)>& rpc) const;
  // Call with `m` in its wire form as the request of `rpc`, the answer in *resp.
  template <typename Req, typename Resp, typename Msg>
  Status Unary(uint32_t peer, std::chrono::milliseconds timeout, const Msg& m,
               grpc::Status (v1::Replication::Stub::*rpc)(grpc::ClientContext*, const Req&, Resp*), Resp* resp) const;
  grpc::ChannelInterface* ChannelOf(uint32_t peer) const;
  // With plaintext_fallback: whether calls to `peer` go in plaintext now
  // (its TLS channel failed and has not connected since). peers_mu_ held.
  bool PlaintextNowLocked(uint32_t peer) const;
  Sender* SenderOf(uint32_t peer, uint32_t stream) const;
  void WatchDropFile();

  Options o_;
  grpc::ChannelArguments args_;
  std::atomic<ReplicaHandler*> handler_{nullptr};
  mutable std::mutex peers_mu_;  // the three maps below (AddPeer adds to them)
  std::map<uint32_t, std::shared_ptr<grpc::Channel>> channels_;
  std::map<uint32_t, std::unique_ptr<v1::Replication::Stub>> stubs_;
  // plaintext_fallback: the plaintext twins, and which peers use them now.
  std::map<uint32_t, std::shared_ptr<grpc::Channel>> plain_channels_;
  std::map<uint32_t, std::unique_ptr<v1::Replication::Stub>> plain_stubs_;
  mutable std::map<uint32_t, bool> on_plaintext_;
  std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<Sender>> senders_;
  std::map<uint32_t, std::string> addresses_;
  std::map<uint32_t, uint16_t> stream_ports_;  // peers' accept stream ports
  std::unique_ptr<AcceptStreamListener> listener_;
  std::atomic<uint64_t> drop_mask_{0};
  std::atomic<uint32_t> loss_ppm_{0}, dup_ppm_{0};  // test faults, parts per million
  std::atomic<uint64_t> fault_seed_{1};
 public:
  // Test faults for one accept (called by the stream senders).
  uint32_t loss_ppm() const { return loss_ppm_.load(std::memory_order_relaxed); }
  uint32_t dup_ppm() const { return dup_ppm_.load(std::memory_order_relaxed); }
  uint64_t fault_seed() const { return fault_seed_.load(std::memory_order_relaxed); }
 private:
  std::atomic<bool> stop_{false};
  std::thread drop_watcher_;
  bool started_ = false;
};

// The Replication service (receiving side) over a ReplicaHandler.
class ReplicationService final : public v1::Replication::Service {
 public:
  // `hello` answers Hello and learns the caller's addresses. Every call
  // needs a member's certificate when `authz` is enabled (authz.h).
  ReplicationService(GrpcTransport* transport, std::function<v1::Member(const v1::Member& caller)> hello,
                     server::Authorizer authz = {})
      : t_(transport), hello_(std::move(hello)), authz_(std::move(authz)) {}

  grpc::Status Promise(grpc::ServerContext*, const v1::PromiseRequest* req, v1::PromiseResponse* resp) override;
  grpc::Status Replicate(grpc::ServerContext*,
                         grpc::ServerReaderWriter<v1::AcceptResponse, v1::AcceptRequest>* stream) override;
  grpc::Status Snapshot(grpc::ServerContext*, const v1::SnapshotRequest* req,
                        grpc::ServerWriter<v1::SnapshotChunk>* writer) override;
  grpc::Status Control(grpc::ServerContext*, const v1::ControlRequest* req, v1::ControlResponse* resp) override;
  grpc::Status Hello(grpc::ServerContext*, const v1::HelloRequest* req, v1::HelloResponse* resp) override;

 private:
  // Not OK: the caller is not a member.
  grpc::Status Authorize(grpc::ServerContext* ctx, const char* method) const {
    return authz_.Check(*ctx, server::Access::kReplication, method);
  }
  // Authorize, then a running replica (into *h) and no test partition from
  // `from`; not OK: the answer to the call.
  grpc::Status Admit(grpc::ServerContext* ctx, const char* method, uint32_t from, ReplicaHandler** h) const;

  GrpcTransport* t_;
  std::function<v1::Member(const v1::Member&)> hello_;
  server::Authorizer authz_;
};

}  // namespace rolis::replication
