#include "stream_sender.h"

#include <spdlog/spdlog.h>

#include "accept_frame.h"
#include "host_port.h"
#include "wire.h"

namespace rolis::replication {

namespace {
// rolis.v1.Replication/Replicate (replication.proto), as the generated stub names it.
const grpc::internal::RpcMethod kReplicateMethod("/rolis.v1.Replication/Replicate",
                                                 grpc::internal::RpcMethod::BIDI_STREAMING);
}  // namespace

template <typename Write>
void GrpcTransport::Sender::WriteUntilBroken(const std::atomic<bool>& reader_done, Write write) {
  while (true) {
    std::deque<AcceptMsg> batch;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait_for(lk, std::chrono::milliseconds(100), [&] { return stop_ || !q_.empty() || reader_done.load(); });
      if (stop_ || reader_done.load()) return;
      batch.swap(q_);
    }
    for (const AcceptMsg& m : batch) {
      if (t_->Dropped(peer_)) continue;
      int copies = 1;
      if (uint32_t loss = t_->loss_ppm(), dup = t_->dup_ppm(); loss + dup > 0) {
        if (rng_seed_ != t_->fault_seed()) {
          rng_seed_ = t_->fault_seed();
          rng_.seed(rng_seed_ * 1000003 + peer_ * 101 + stream_);
        }
        uint32_t draw = static_cast<uint32_t>(rng_() % 1000000);
        if (draw < loss) copies = 0;
        else if (draw < loss + dup) copies = 2;
      }
      if (copies > 0 && !write(m, copies)) return;
    }
  }
}

void GrpcTransport::Sender::Run() {
  auto backoff = std::chrono::milliseconds(20);
  while (true) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !q_.empty(); });
      if (stop_) return;
    }
    // The accept stream when the peer told its port (Hello), else gRPC's
    // Replicate call.
    const uint16_t port = t_->AcceptStreamPortOf(peer_);
    const bool got_reply = port != 0 ? OneConnection(port) : OneCall();
    {
      std::lock_guard<std::mutex> g(mu_);
      if (stop_) return;
    }
    // What was in flight on this call may be lost: the leader resends.
    if (ReplicaHandler* h = t_->handler()) h->OnLinkReset(peer_, stream_);
    backoff = got_reply ? std::chrono::milliseconds(20) : std::min(backoff * 2, std::chrono::milliseconds(500));
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, backoff, [&] { return stop_; });
    if (stop_) return;
  }
}

bool GrpcTransport::Sender::OneCall() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stop_) return false;
    ctx_ = ctx.get();
  }
  // The generated stub's Replicate, with the requests as prebuilt bytes
  // (AcceptFrame: the payload is not copied).
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, v1::AcceptResponse>> rw(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, v1::AcceptResponse>::Create(
          t_->ChannelOf(peer_), kReplicateMethod, ctx.get()));
  std::atomic<bool> reader_done{false};
  std::atomic<bool> got_reply{false};
  std::thread reader([&] {
    NameThisThread("rolis-recv-" + std::to_string(peer_) + "." + std::to_string(stream_));
    v1::AcceptResponse resp;
    while (rw->Read(&resp)) {
      got_reply.store(true);
      Deliver(resp);
    }
    reader_done.store(true);
    cv_.notify_all();
  });
  WriteUntilBroken(reader_done, [&](const AcceptMsg& m, int copies) {
    const grpc::ByteBuffer frame = wire::AcceptFrame(m);
    for (int i = 0; i < copies; i++) {
      if (!rw->Write(frame)) return false;
    }
    return true;
  });
  ctx->TryCancel();
  reader.join();
  (void)rw->Finish();
  std::lock_guard<std::mutex> g(mu_);
  ctx_ = nullptr;
  return got_reply.load();
}

bool GrpcTransport::Sender::OneConnection(uint16_t port) {
  std::string error;
  const std::string host = BareHost(HostOf(t_->AddressOf(peer_)));
  int fd = DialTcp(host, port, std::chrono::milliseconds(1000), &error);
  const StreamSecurity& sec = t_->o_.security;
  std::unique_ptr<ByteStream> stream;
  if (fd >= 0) stream = sec.client ? sec.client(fd, host, &error) : WrapSocket(fd);
  bool plaintext = !sec.client;
  if (!stream && fd >= 0 && t_->o_.plaintext_fallback) {
    // --tls-accept-plaintext: a peer that refused TLS is dialed again in
    // plaintext; the next connection tries TLS first again.
    std::string plain_error;
    if (int pfd = DialTcp(host, port, std::chrono::milliseconds(1000), &plain_error); pfd >= 0) {
      stream = WrapSocket(pfd);
      plaintext = true;
    } else {
      error += "; in plaintext: " + plain_error;
    }
  }
  if (!stream) {
    if (dial_failures_++ % 50 == 0) {
      spdlog::warn("replication: accepts to member {} (stream {}) go on the replication port: its accept stream "
                   "at {}:{} failed: {}", peer_, stream_, host, port, error);
    }
    on_stream_ = false;
    // The port may be stale (the peer restarted): ask its Hello again.
    t_->SetAcceptStreamPort(peer_, 0);
    return false;
  }
  if (!on_stream_ || plaintext != stream_plaintext_) {  // logged when accepts move, not per reconnection
    on_stream_ = true;
    stream_plaintext_ = plaintext;
    spdlog::info("replication: accepts to member {} (stream {}) go on its accept stream at {}:{} ({})", peer_,
                 stream_, host, port, plaintext ? "plaintext" : "mutual TLS");
  }
  auto conn = std::make_shared<FrameConn>(std::move(stream), static_cast<size_t>(t_->o_.max_message_bytes));
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stop_) return false;
    conn_ = conn;
  }
  std::atomic<bool> reader_done{false};
  std::atomic<bool> got_reply{false};
  std::thread reader([&] {
    NameThisThread("rolis-recv-" + std::to_string(peer_) + "." + std::to_string(stream_));
    std::string frame;
    v1::AcceptResponse resp;
    while (conn->ReadFrame(&frame)) {
      if (!resp.ParseFromString(frame)) break;  // a peer that speaks something else
      got_reply.store(true);
      Deliver(resp);
    }
    reader_done.store(true);
    cv_.notify_all();
  });
  if (conn->WritePreface()) {
    WriteUntilBroken(reader_done, [&](const AcceptMsg& m, int copies) {
      const wire::AcceptFrameParts frame = wire::AcceptFramePartsOf(m);
      const std::string_view parts[2] = {frame.head, frame.payload()};
      for (int i = 0; i < copies; i++) {
        if (!conn->WriteFrame(parts, 2)) return false;
      }
      return true;
    });
  }
  conn->Shutdown();
  reader.join();
  // Not a member's accept stream, or not one that answers: gRPC until
  // its next Hello says the port again.
  if (!got_reply.load()) {
    t_->SetAcceptStreamPort(peer_, 0);
    on_stream_ = false;
  }
  std::lock_guard<std::mutex> g(mu_);
  conn_ = nullptr;
  return got_reply.load();
}

void GrpcTransport::Sender::Deliver(const v1::AcceptResponse& resp) {
  if (t_->Dropped(peer_)) return;
  if (ReplicaHandler* h = t_->handler()) h->OnAcceptReply(peer_, wire::FromWire(resp));
}

}  // namespace rolis::replication
