#include "grpc_transport.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>

#include "accept_stream.h"
#include "idle_watch.h"
#include "snapshot_chunks.h"
#include "stream_sender.h"
#include "wire.h"

namespace rolis::replication {

namespace {
Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return Status::OK();
  return Status(StatusCode::kInternal, "unavailable: " + s.error_message());
}
std::chrono::system_clock::time_point Deadline(std::chrono::milliseconds t) {
  return std::chrono::system_clock::now() + t;
}

// The chunks of a snapshot into `sink` as they arrive (*last: the final
// chunk came and the sink's End returned OK), then the call's status. An
// error of the sink cancels the call (the sender's scan stops) and is put
// in *sink_error.
grpc::Status ReadSnapshot(grpc::ClientContext* ctx, std::unique_ptr<grpc::ClientReader<v1::SnapshotChunk>> reader,
                          uint32_t streams, SnapshotSink* sink, IdleWatch* watch, bool* last, Status* sink_error) {
  v1::SnapshotChunk c;
  bool first = true;
  while (reader->Read(&c)) {
    watch->Progress();
    Status s;
    if (first) {
      first = false;
      if (!c.ok()) {
        *sink_error = Status::FailedPrecondition(c.error());
        ctx->TryCancel();
        break;
      }
      SnapshotReply h;
      h.ok = true;
      h.at = wire::FromWire(c.at());
      h.decided = c.has_decided() ? wire::FromWire(c.decided()) : nullptr;
      h.leader_epoch = c.leader_epoch();
      h.next_slot.assign(c.next_slot().begin(), c.next_slot().end());
      h.skip.assign(c.skip().begin(), c.skip().end());
      h.stream_barrier.assign(c.stream_barrier().begin(), c.stream_barrier().end());
      for (const auto& k : c.stream_key()) h.stream_key.push_back(wire::FromWire(k));
      if (h.next_slot.size() != streams || h.skip.size() != streams || h.stream_key.size() != streams ||
          h.stream_barrier.size() != streams) {
        s = Status::InvalidArgument("snapshot of another number of streams");
      } else {
        s = sink->Begin(h);
      }
    }
    for (int i = 0; s.ok() && i < c.writes_size(); i++) {
      const v1::LogWrite& w = c.writes(i);
      s = sink->Add(w.table(), w.key(), w.value());
    }
    if (s.ok() && c.last()) {
      s = sink->End();
      if (s.ok()) *last = true;
    }
    if (!s.ok()) {
      *sink_error = s;
      ctx->TryCancel();
      break;
    }
  }
  return reader->Finish();
}
}  // namespace

GrpcTransport::GrpcTransport(Options o) : o_(std::move(o)) {
  args_.SetMaxReceiveMessageSize(o_.max_message_bytes);
  args_.SetMaxSendMessageSize(o_.max_message_bytes);
  args_.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args_.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args_.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 2000);
  args_.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 2000);
  args_.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // A peer is named by DNS (a pod of the StatefulSet's headless Service) and
  // comes back at a new IP after its pod is replaced. A failed connection
  // asks the resolver again, but gRPC allows that at most every 30 s by
  // default, so a failover soon after an earlier restart kept dialling the
  // old IP and the candidate missed that member's promise.
  args_.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS, 1000);
  for (const Peer& p : o_.peers) AddPeer(p.id, p.address);
}

void GrpcTransport::AddPeer(uint32_t id, const std::string& address) {
  if (id == o_.self || address.empty()) return;
  std::lock_guard<std::mutex> g(peers_mu_);
  if (stubs_.count(id)) return;  // known (an address never changes: see membership.h)
  auto ch = grpc::CreateCustomChannel(
      address, o_.credentials ? o_.credentials : grpc::InsecureChannelCredentials(), args_);
  stubs_[id] = v1::Replication::NewStub(ch);
  if (o_.plaintext_fallback) {
    auto plain = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args_);
    plain_stubs_[id] = v1::Replication::NewStub(plain);
    plain_channels_[id] = std::move(plain);
  }
  addresses_[id] = address;
  channels_[id] = std::move(ch);
  for (uint32_t t = 0; t < o_.streams; t++) {
    auto& s = senders_[{id, t}];
    s = std::make_unique<Sender>(this, id, t);
    if (started_ && !stop_.load()) s->Start();
  }
}

GrpcTransport::~GrpcTransport() { Stop(); }

void GrpcTransport::Start() {
  {
    std::lock_guard<std::mutex> g(peers_mu_);
    if (started_) return;
    started_ = true;
    for (auto& [k, s] : senders_) s->Start();
  }
  if (!o_.drop_peers_file.empty()) drop_watcher_ = std::thread([this] { WatchDropFile(); });
}

void GrpcTransport::Stop() {
  if (stop_.exchange(true)) return;
  handler_.store(nullptr);
  std::vector<Sender*> senders;
  {
    std::lock_guard<std::mutex> g(peers_mu_);
    for (auto& [k, s] : senders_) senders.push_back(s.get());
  }
  for (Sender* s : senders) s->Stop();
  if (listener_) listener_->Stop();
  if (drop_watcher_.joinable()) drop_watcher_.join();
}

namespace {

// The accepts a connection had buffered together: taken one by one, then
// settled at once (durable replies: ReplicaHandler::SettleAccepts) and
// answered in one write.
class AcceptGroup final : public AcceptStreamListener::FrameGroup {
 public:
  explicit AcceptGroup(GrpcTransport* t) : t_(t) {}
  AcceptStreamListener::Served Add(std::string_view request) override {
    // Parsed from the connection's buffer: the batch's bytes are copied
    // once, into the message (a follower's CPU also runs replay).
    v1::AcceptRequest req;
    if (!req.ParseFromArray(request.data(), static_cast<int>(request.size()))) {
      return AcceptStreamListener::Served::kClose;
    }
    AcceptReply r;
    AcceptedRef ref;
    switch (t_->TakeAccept(std::move(req), &r, &ref)) {
      case GrpcTransport::Served::kNotReady: return AcceptStreamListener::Served::kClose;
      case GrpcTransport::Served::kDropped: return AcceptStreamListener::Served::kNoReply;
      case GrpcTransport::Served::kReply: break;
    }
    replies_.push_back(std::move(r));
    refs_.push_back(ref);
    return AcceptStreamListener::Served::kReply;
  }
  void Finish(std::vector<std::string>* out) override {
    if (replies_.empty()) return;
    if (ReplicaHandler* h = t_->handler()) h->SettleAccepts(refs_, &replies_);
    for (const AcceptReply& r : replies_) {
      resp_.Clear();
      wire::ToWire(r, &resp_);
      resp_.SerializeToString(&out->emplace_back());
    }
    replies_.clear();
    refs_.clear();
  }

 private:
  GrpcTransport* t_;
  std::vector<AcceptReply> replies_;
  std::vector<AcceptedRef> refs_;
  v1::AcceptResponse resp_;
};

}  // namespace

bool GrpcTransport::ListenAcceptStream(uint16_t port, std::string* error) {
  AcceptStreamListener::MakeGroup make = [this] {
    return std::unique_ptr<AcceptStreamListener::FrameGroup>(std::make_unique<AcceptGroup>(this));
  };
  auto l = std::make_unique<AcceptStreamListener>(o_.security, static_cast<size_t>(o_.max_message_bytes), make);
  if (!l->Start(port, error)) return false;
  listener_ = std::move(l);
  return true;
}

void GrpcTransport::SetAcceptStreamPort(uint32_t peer, uint16_t port) {
  std::lock_guard<std::mutex> g(peers_mu_);
  stream_ports_[peer] = port;
}

uint16_t GrpcTransport::AcceptStreamPortOf(uint32_t peer) const {
  std::lock_guard<std::mutex> g(peers_mu_);
  auto it = stream_ports_.find(peer);
  return it == stream_ports_.end() ? 0 : it->second;
}

std::string GrpcTransport::AddressOf(uint32_t peer) const {
  std::lock_guard<std::mutex> g(peers_mu_);
  auto it = addresses_.find(peer);
  return it == addresses_.end() ? std::string() : it->second;
}

void GrpcTransport::WatchDropFile() {
  while (!stop_.load()) {
    uint64_t mask = 0;
    std::ifstream f(o_.drop_peers_file);
    if (f) {
      std::stringstream ss;
      ss << f.rdbuf();
      std::string text = ss.str();
      for (char& c : text) {
        if (c == ',' || c == '\n' || c == ' ') c = ' ';
      }
      std::istringstream in(text);
      std::string word;
      uint32_t loss = 0, dup = 0;
      uint64_t seed = 1;
      while (in >> word) {
        auto prob = [&](size_t at) { return static_cast<uint32_t>(std::stod(word.substr(at)) * 1e6); };
        try {
          if (word.rfind("loss=", 0) == 0) {
            loss = prob(5);
          } else if (word.rfind("dup=", 0) == 0) {
            dup = prob(4);
          } else if (word.rfind("seed=", 0) == 0) {
            seed = std::stoull(word.substr(5));
          } else {
            uint32_t id = static_cast<uint32_t>(std::stoul(word));
            if (id < 64) mask |= uint64_t{1} << id;
          }
        } catch (const std::exception&) {
        }
      }
      loss_ppm_.store(loss, std::memory_order_relaxed);
      dup_ppm_.store(dup, std::memory_order_relaxed);
      fault_seed_.store(seed, std::memory_order_relaxed);
    }
    drop_mask_.store(mask, std::memory_order_relaxed);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool GrpcTransport::PlaintextNowLocked(uint32_t peer) const {
  auto plain = plain_channels_.find(peer);
  auto tls = channels_.find(peer);
  if (plain == plain_channels_.end() || tls == channels_.end()) return false;
  // Asking the state with try_to_connect keeps the TLS channel dialing, so
  // it is READY again as soon as the peer takes TLS.
  const grpc_connectivity_state st = tls->second->GetState(true);
  bool& on_plain = on_plaintext_[peer];
  if (st == GRPC_CHANNEL_READY && on_plain) {
    on_plain = false;
    spdlog::info("replication: calls to member {} go over TLS again", peer);
  } else if (st == GRPC_CHANNEL_TRANSIENT_FAILURE && !on_plain) {
    on_plain = true;
    spdlog::warn("replication: member {} does not take TLS: calls to it go in plaintext (--tls-accept-plaintext)",
                 peer);
  }
  return on_plain;
}

grpc::ChannelInterface* GrpcTransport::ChannelOf(uint32_t peer) const {
  std::lock_guard<std::mutex> g(peers_mu_);
  if (PlaintextNowLocked(peer)) return plain_channels_.at(peer).get();
  auto it = channels_.find(peer);
  return it == channels_.end() ? nullptr : it->second.get();
}

// Entries are never erased: the pointers stay valid without the lock.
v1::Replication::Stub* GrpcTransport::StubOf(uint32_t peer) const {
  std::lock_guard<std::mutex> g(peers_mu_);
  if (PlaintextNowLocked(peer)) return plain_stubs_.at(peer).get();
  auto it = stubs_.find(peer);
  return it == stubs_.end() ? nullptr : it->second.get();
}

GrpcTransport::Sender* GrpcTransport::SenderOf(uint32_t peer, uint32_t stream) const {
  std::lock_guard<std::mutex> g(peers_mu_);
  auto it = senders_.find({peer, stream});
  return it == senders_.end() ? nullptr : it->second.get();
}

void GrpcTransport::SendAccept(uint32_t peer, const AcceptMsg& m) {
  if (Sender* s = SenderOf(peer, m.stream)) s->Push(m);
}

size_t GrpcTransport::Queued(uint32_t peer, uint32_t stream) const {
  Sender* s = SenderOf(peer, stream);
  return s ? s->Queued() : 0;
}

Status GrpcTransport::Call(uint32_t peer, std::chrono::milliseconds timeout,
                           const std::function<grpc::Status(v1::Replication::Stub*, grpc::ClientContext*)>& rpc) const {
  auto* stub = StubOf(peer);
  if (!stub || Dropped(peer)) return Status(StatusCode::kInternal, "unavailable: no route to member");
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(timeout));
  return FromGrpc(rpc(stub, &ctx));
}

template <typename Req, typename Resp, typename Msg>
Status GrpcTransport::Unary(uint32_t peer, std::chrono::milliseconds timeout, const Msg& m,
                            grpc::Status (v1::Replication::Stub::*rpc)(grpc::ClientContext*, const Req&, Resp*),
                            Resp* resp) const {
  Req req;
  wire::ToWire(m, &req);
  return Call(peer, timeout, [&](auto* stub, auto* ctx) { return (stub->*rpc)(ctx, req, resp); });
}

Status GrpcTransport::Promise(uint32_t peer, const PromiseMsg& m, PromiseReply* r, std::chrono::milliseconds timeout) {
  v1::PromiseResponse resp;
  if (Status s = Unary(peer, timeout, m, &v1::Replication::Stub::Promise, &resp); !s.ok()) return s;
  std::string err;
  if (!wire::FromWire(resp, r, &err)) return Status::InvalidArgument(err);
  r->from = peer;
  return Status::OK();
}

Status GrpcTransport::Control(uint32_t peer, const ControlMsg& m, ControlReply* r, std::chrono::milliseconds timeout) {
  v1::ControlResponse resp;
  if (Status s = Unary(peer, timeout, m, &v1::Replication::Stub::Control, &resp); !s.ok()) return s;
  *r = wire::FromWire(resp);
  r->from = peer;
  return Status::OK();
}

Status GrpcTransport::Snapshot(uint32_t peer, const SnapshotMsg& m, SnapshotSink* sink,
                               std::chrono::milliseconds timeout) {
  v1::SnapshotRequest req;
  req.set_member_id(m.from);
  bool last = false, stalled = false;
  Status sink_error;
  // No bound on the whole call (a day stands for none): `timeout` bounds the
  // wait for each chunk (the first one included), so a store of any size
  // streams while it moves.
  Status s = Call(peer, std::chrono::hours(24), [&](auto* stub, auto* ctx) {
    IdleWatch watch(ctx, timeout);
    grpc::Status st = ReadSnapshot(ctx, stub->Snapshot(ctx, req), o_.streams, sink, &watch, &last, &sink_error);
    stalled = watch.fired();
    return st;
  });
  if (!sink_error.ok()) return sink_error;  // the call was cancelled for it
  if (stalled) {
    return Status(StatusCode::kInternal, "unavailable: snapshot stalled: no chunk for " +
                                             std::to_string(timeout.count()) + " ms");
  }
  if (!s.ok()) return s;
  if (!last) return Status(StatusCode::kInternal, "unavailable: snapshot cut short");
  return Status::OK();
}

Status GrpcTransport::Hello(uint32_t peer, const v1::Member& self, v1::Member* out, std::chrono::milliseconds timeout) {
  v1::HelloRequest req;
  *req.mutable_self() = self;
  v1::HelloResponse resp;
  Status s = Call(peer, timeout, [&](auto* stub, auto* ctx) { return stub->Hello(ctx, req, &resp); });
  if (s.ok()) *out = resp.self();
  return s;
}

// ---------------------------------------------------------------------------

namespace {
const grpc::Status kNotReady(grpc::StatusCode::UNAVAILABLE, "replication is not running");
const grpc::Status kDropped(grpc::StatusCode::UNAVAILABLE, "dropped (test partition)");
}  // namespace

GrpcTransport::Served GrpcTransport::TakeAccept(v1::AcceptRequest&& req, AcceptReply* reply, AcceptedRef* ref) {
  ReplicaHandler* h = handler();
  if (!h) return Served::kNotReady;
  if (Dropped(req.from())) return Served::kDropped;  // as if lost on the way
  AcceptMsg m;
  std::string err;
  AcceptReply& r = *reply;
  const uint32_t stream_id = req.stream();
  const uint64_t slot_index = req.slot().index();
  if (!wire::FromWire(std::move(req), &m, &err)) {
    r.from = self();
    r.stream = stream_id;
    r.slot_index = slot_index;
    r.error = err;
    r.ok = false;
  } else {
    r = h->HandleAccept(m);
    *ref = AcceptedRef{m.stream, m.epoch, m.log_start};
  }
  return Served::kReply;
}

GrpcTransport::Served GrpcTransport::ServeAccept(v1::AcceptRequest&& req, v1::AcceptResponse* resp) {
  std::vector<AcceptReply> r(1);
  std::vector<AcceptedRef> ref(1);
  const Served s = TakeAccept(std::move(req), &r[0], &ref[0]);
  if (s != Served::kReply) return s;
  if (ReplicaHandler* h = handler()) h->SettleAccepts(ref, &r);
  resp->Clear();
  wire::ToWire(r[0], resp);
  return Served::kReply;
}

grpc::Status ReplicationService::Admit(grpc::ServerContext* ctx, const char* method, uint32_t from,
                                       ReplicaHandler** h) const {
  if (grpc::Status st = Authorize(ctx, method); !st.ok()) return st;
  *h = t_->handler();
  if (!*h) return kNotReady;
  if (t_->Dropped(from)) return kDropped;
  return grpc::Status::OK;
}

grpc::Status ReplicationService::Promise(grpc::ServerContext* ctx, const v1::PromiseRequest* req,
                                         v1::PromiseResponse* resp) {
  ReplicaHandler* h = nullptr;
  if (grpc::Status st = Admit(ctx, "rolis.v1.Replication/Promise", req->candidate_id(), &h); !st.ok()) return st;
  PromiseReply r = h->HandlePromise(wire::FromWire(*req, 0));
  wire::ToWire(r, resp);
  return grpc::Status::OK;
}

grpc::Status ReplicationService::Replicate(grpc::ServerContext* ctx,
                                           grpc::ServerReaderWriter<v1::AcceptResponse, v1::AcceptRequest>* stream) {
  if (grpc::Status st = Authorize(ctx, "rolis.v1.Replication/Replicate"); !st.ok()) return st;
  v1::AcceptRequest req;
  v1::AcceptResponse resp;
  while (stream->Read(&req)) {
    switch (t_->ServeAccept(std::move(req), &resp)) {
      case GrpcTransport::Served::kNotReady: return kNotReady;
      case GrpcTransport::Served::kDropped: continue;
      case GrpcTransport::Served::kReply: break;
    }
    if (!stream->Write(resp)) break;
  }
  return grpc::Status::OK;
}

grpc::Status ReplicationService::Snapshot(grpc::ServerContext* ctx, const v1::SnapshotRequest* req,
                                          grpc::ServerWriter<v1::SnapshotChunk>* writer) {
  ReplicaHandler* h = nullptr;
  if (grpc::Status st = Admit(ctx, "rolis.v1.Replication/Snapshot", req->member_id(), &h); !st.ok()) return st;
  SnapshotMsg m;
  m.from = req->member_id();
  // Each chunk goes out as the scan (or the checkpoint read) fills it: the
  // store is never copied whole (docs/replication.md, "Members that lose
  // their memory"). A reader that goes away ends the scan.
  SnapshotChunkSink sink([writer](const v1::SnapshotChunk& c) { return writer->Write(c); });
  const Status s = h->HandleSnapshot(m, &sink);
  if (s.ok()) return grpc::Status::OK;
  if (!sink.begun()) {
    sink.Refuse(s.message());
    return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::ABORTED, "snapshot cut short: " + s.message());
}

grpc::Status ReplicationService::Control(grpc::ServerContext* ctx, const v1::ControlRequest* req,
                                         v1::ControlResponse* resp) {
  ReplicaHandler* h = nullptr;
  if (grpc::Status st = Admit(ctx, "rolis.v1.Replication/Control", req->from(), &h); !st.ok()) return st;
  ControlMsg m;
  std::string err;
  if (!wire::FromWire(*req, &m, &err)) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, err);
  wire::ToWire(h->HandleControl(m), resp);
  return grpc::Status::OK;
}

grpc::Status ReplicationService::Hello(grpc::ServerContext* ctx, const v1::HelloRequest* req,
                                       v1::HelloResponse* resp) {
  if (grpc::Status st = Authorize(ctx, "rolis.v1.Replication/Hello"); !st.ok()) return st;
  if (t_->Dropped(req->self().id())) return kDropped;
  *resp->mutable_self() = hello_(req->self());
  return grpc::Status::OK;
}

}  // namespace rolis::replication
