#include "rolis/thread_name.h"
#include "paxos_replicator.h"

#include <cstdlib>

#include <spdlog/spdlog.h>

#include <algorithm>

#include "durability/checkpoint.h"
#include "durability/durable_member.h"
#include "replication/election_timer.h"
#include "host_port.h"
#include "wire.h"

namespace rolis::replication {

namespace {

// How often the built-in election looks at the time since the leader's last
// contact: its granularity, added to the failover gap at most once.
constexpr int kElectionCheckMillis = 10;

grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  const std::string& m = s.message();
  switch (s.code()) {
    case StatusCode::kFailedPrecondition: return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, m);
    case StatusCode::kAborted: return grpc::Status(grpc::StatusCode::ABORTED, m);
    case StatusCode::kInvalidArgument: return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, m);
    default:
      if (m.rfind("unavailable", 0) == 0) return grpc::Status(grpc::StatusCode::UNAVAILABLE, m);
      return grpc::Status(grpc::StatusCode::INTERNAL, m);
  }
}

// An address others can use: a wildcard listen host is replaced by the host
// of this member's replication address.
std::string Advertised(const std::string& listen, const std::string& repl_address) {
  std::string host = HostOf(listen);
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::") {
    return HostOf(repl_address) + ":" + PortOf(listen);
  }
  return listen;
}

Decided FromProto(const v1::EpochRecord& r) {
  DecidedPtr d = wire::FromWire(r);
  return d ? *d : Decided{};
}

}  // namespace

std::unique_ptr<server::Replicator> MakeReplicator(const server::ServerConfig& config) {
  PaxosReplicatorOptions o;
  o.config = config;
  o.batch_size = config.batch_size;
  o.batch_timeout = config.batch_timeout;
  o.max_inflight_batches = config.max_inflight_batches;
  o.drop_peers_file = config.test_drop_peers_file;
  o.election_timeout = config.election_timeout;
  return std::make_unique<PaxosReplicator>(std::move(o));
}

PaxosReplicator::PaxosReplicator(PaxosReplicatorOptions o) : o_(std::move(o)) {
  // Before the engine opens: the base of the ts ceiling (see TsClock).
  nanos_before_open_ = MonotonicNanos();
  const server::ServerConfig& c = o_.config;
  GrpcTransport::Options to;
  to.self = c.id;
  to.streams = std::max({1u, c.replication_streams, c.worker_threads});  // 0 = worker_threads (unfinalized)
  to.drop_peers_file = o_.drop_peers_file;
  ReplicaOptions ro;
  ro.id = c.id;
  ro.decider = c.decider == server::Decider::kOperator ? Decider::kOperator : Decider::kControlStream;
  ro.streams = to.streams;
  ro.batch_size = std::max(1u, o_.batch_size);
  ro.batch_timeout = o_.batch_timeout;
  // A resting leader's heartbeats must reach followers well within the
  // election timeout (a follower that hears nothing for it runs an election).
  ro.idle_heartbeat = std::clamp(o_.election_timeout / 5, std::chrono::milliseconds(1), ro.idle_heartbeat);
  ro.max_inflight = std::max(2u, o_.max_inflight_batches);
  ro.peer_window = ro.max_inflight;
  ro.client_address = c.ClientAddress();
  for (const server::Peer& p : c.peers) {
    ro.members.push_back(p.id);
    ro.addresses[p.id] = p.address;
    if (p.id == c.id) {
      repl_address_ = p.address;
    } else {
      to.peers.push_back({p.id, p.address});
    }
  }
  if (!MakePeerCredentials(c, &creds_, &creds_error_)) creds_ = PeerCredentials{};
  to.credentials = creds_.channel;
  to.plaintext_fallback = creds_.plaintext_fallback;
  to.security = creds_.stream;
  transport_ = std::make_unique<GrpcTransport>(to);
  TsClock clock;
  const uint64_t before = nanos_before_open_;
  auto* after = &nanos_after_open_;
  clock.floor = [after] {
    uint64_t a = after->load(std::memory_order_acquire);
    uint64_t now = MonotonicNanos();
    return a != UINT64_MAX && now > a ? (now - a) << 8 : 0;
  };
  clock.ceiling = [before] { return ((MonotonicNanos() - before + 2) << 8) | 0xFF; };
  replica_ = std::make_unique<Replica>(ro, transport_.get(), clock);
  service_ = std::make_unique<ReplicationService>(
      transport_.get(), [this](const v1::Member& m) { return OnHello(m); }, server::Authorizer::FromConfig(c));
}

PaxosReplicator::~PaxosReplicator() { Stop(); }

void PaxosReplicator::Attach(Database* db, std::vector<std::mutex*> worker_mutexes) {
  // After the engine opened: the base of the ts floor. The engine's clock
  // base lies between the two readings; the floor is refined by every batch
  // the leader closes (Replica::OnCommit).
  uint64_t after = MonotonicNanos();
  nanos_after_open_.store(after, std::memory_order_release);
  spdlog::info("replication: the engine's clock base is known within {} us", (after - nanos_before_open_) / 1000);
  db_ = db;
  replica_->Attach(db, std::move(worker_mutexes));
}

Status PaxosReplicator::Recover() {
  const server::ServerConfig& c = o_.config;
  if (c.durability != server::Durability::kDisk) {
    spdlog::info("durability: memory (a member that restarts forgets its votes and catches up by state transfer; "
                 "--data-dir keeps them)");
    return Status::OK();
  }
  // Test hooks (docs/operations.md, "Durability", test hooks): a pause
  // inside every checkpoint's commit window, and a member that gives no
  // snapshot. Tests only.
  if (const char* v = std::getenv("ROLIS_TEST_CHECKPOINT_COMMIT_PAUSE_MS"); v && *v) {
    const uint32_t ms = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    durability::SetCheckpointCommitPauseForTest(ms);
    spdlog::warn("test hook: every checkpoint pauses {} ms between its fdatasync and its rename", ms);
  }
  if (const char* v = std::getenv("ROLIS_TEST_REFUSE_SNAPSHOTS"); v && *v) {
    // A comma-separated list of member ids.
    std::string ids = std::string(",") + v + ",";
    if (ids.find("," + std::to_string(c.id) + ",") != std::string::npos) {
      replica_->RefuseSnapshotsForTest(true);
      spdlog::warn("test hook: this member refuses to serve snapshots");
    }
  }
  durability::DurableMemberOptions dm;
  dm.dir = c.data_dir;
  dm.streams = replica_->options().streams;
  dm.checkpoint_every_bytes = c.checkpoint_every;
  if (Status s = durability::DurableMember::Open(dm, db_, replica_.get(), &durable_); !s.ok()) return s;
  spdlog::info("durability: disk, data directory {}: {}; {}", c.data_dir, durable_->recovery_summary(),
               durable_->had_state() ? "it had state: it votes at once"
                                     : "empty: it probes the others (a new cluster, or it catches up by state transfer)");
  return Status::OK();
}

void PaxosReplicator::Start() {
  if (started_) return;
  started_ = true;
  if (!creds_.server) {
    // The client ports refuse the same files, and rolisd exits.
    spdlog::error("replication: not listening: {}", creds_error_);
    return;
  }
  grpc::ServerBuilder b;
  int port = 0;
  // gRPC sets SO_REUSEPORT by default: a second process on this port would
  // start and take part of the connections (another member's, or another
  // benchmark's follower that picked the same free port). Fail instead.
  b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  b.RegisterService(service_.get());
  b.SetMaxReceiveMessageSize(512 << 20);
  b.SetMaxSendMessageSize(512 << 20);
  // Peers ping every 2 s to find dead connections (a paused or vanished
  // member): allow it, even between calls.
  b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // Listen on every interface at the port of this member's --peers entry.
  Status listening = server::StartGrpcServer(b, "0.0.0.0:" + PortOf(repl_address_), creds_.server,
                                             o_.config.tls_accept_plaintext, "replication", &server_, &front_, &port);
  if (!listening.ok() || port == 0) {
    spdlog::error("replication: cannot listen on port {} (this member's --peers address {}): {}",
                  PortOf(repl_address_), repl_address_, listening.message());
  } else {
    spdlog::info("replication: member {} of {} listening on {} ({}, {} streams, batch {} / {} us)", o_.config.id,
                 o_.config.peers.size(), repl_address_, creds_.plaintext_fallback ? "mutual TLS and plaintext" : creds_.tls ? "mutual TLS" : "plaintext",
                 replica_->options().streams, replica_->options().batch_size, replica_->options().batch_timeout.count());
  }
  if (o_.config.accept_stream_port >= 0) {
    std::string error;
    if (transport_->ListenAcceptStream(static_cast<uint16_t>(o_.config.accept_stream_port), &error)) {
      spdlog::info("replication: accept stream on port {} ({})", transport_->accept_stream_port(),
                   creds_.plaintext_fallback ? "mutual TLS and plaintext" : creds_.tls ? "mutual TLS" : "plaintext");
    } else {
      // Peers then use the gRPC port for accepts too.
      spdlog::warn("replication: no accept stream ({}); accepts go on the replication port", error);
    }
  }
  replica_->Start();
  hello_thread_ = std::thread([this] { HelloLoop(); });
  if (o_.config.election == server::Election::kBuiltin) {
    election_thread_ = std::thread([this] { ElectionLoop(); });
  }
}

void PaxosReplicator::Stop() {
  if (stop_.exchange(true)) return;
  stop_cv_.notify_all();
  if (election_thread_.joinable()) election_thread_.join();
  if (hello_thread_.joinable()) hello_thread_.join();
  replica_->Stop();
  if (front_) front_->Stop();  // before the server: no connection is handed to a stopped one
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  transport_->Stop();
}

Role PaxosReplicator::role() const { return replica_->role(); }

bool PaxosReplicator::AwaitWatermark(uint64_t commit_ts, WatermarkWaiter* waiter) {
  return replica_->AwaitWatermark(commit_ts, waiter);
}

uint64_t PaxosReplicator::watermark_ts() const { return replica_->GetStatus().watermark.ts; }

server::Replicator::TransferCounts PaxosReplicator::transfer_counts() const {
  ReplicaStatus st = replica_->GetStatus();
  return {.completed = st.state_transfers,
          .leader_snapshots = st.leader_snapshots,
          .checkpoint_snapshots = st.checkpoint_snapshots};
}

server::Replicator::ReplicationLag PaxosReplicator::replication_lag() const {
  const ReplicaStatus st = replica_->GetStatus();
  ReplicationLag out;
  out.watermark_mono_ns = st.watermark_mono_ns;
  const LogKey g = st.watermark;
  for (const StreamStatus& s : st.streams) {
    double lag = -1;  // G or the replayed key is of another epoch: ts do not compare
    if (s.through_watermark) {
      lag = 0;
    } else if (g.epoch != 0 && s.replayed_key.epoch == g.epoch) {
      // ts = (ticks << 8) | worker (docs/architecture.md, the commit protocol)
      lag = s.replayed_key.ts >= g.ts ? 0 : static_cast<double>((g.ts >> 8) - (s.replayed_key.ts >> 8)) / 1e9;
    }
    out.stream_lag_seconds.push_back(lag);
  }
  return out;
}

v1::Member PaxosReplicator::Self() const {
  v1::Member m;
  m.set_id(o_.config.id);
  m.set_address(repl_address_);
  m.set_admin_address(Advertised(o_.config.admin_listen, repl_address_));
  m.set_client_address(Advertised(o_.config.ClientAddress(), repl_address_));
  m.set_accept_stream_port(transport_->accept_stream_port());
  return m;
}

v1::Member PaxosReplicator::OnHello(const v1::Member& caller) {
  // Any member may call: one added by a membership change is not in --peers.
  if (caller.id() != 0 && caller.id() != o_.config.id) {
    transport_->SetAcceptStreamPort(caller.id(), static_cast<uint16_t>(caller.accept_stream_port()));
    std::lock_guard<std::mutex> g(members_mu_);
    members_[caller.id()] = caller;
  }
  return Self();
}

std::vector<MemberAddr> PaxosReplicator::HelloTargets() const {
  // The configuration in force, and the members this one started with.
  std::vector<MemberAddr> out = replica_->Configuration();
  for (const server::Peer& p : o_.config.peers) {
    if (!Contains(out, p.id)) out.push_back(MemberAddr{p.id, p.address});
  }
  return out;
}

void PaxosReplicator::HelloLoop() {
  NameThisThread("rolis-hello");
  // Learn where every member's admin and client APIs are (status and
  // failover given one admin endpoint reach the others through them).
  while (!stop_.load()) {
    bool all = true;
    for (const MemberAddr& p : HelloTargets()) {
      if (p.id == o_.config.id) continue;
      v1::Member m;
      if (transport_->Hello(p.id, Self(), &m, std::chrono::milliseconds(500)).ok() && m.id() == p.id) {
        transport_->SetAcceptStreamPort(p.id, static_cast<uint16_t>(m.accept_stream_port()));
        std::lock_guard<std::mutex> g(members_mu_);
        members_[p.id] = m;
      } else {
        all = false;
      }
    }
    std::unique_lock<std::mutex> lk(stop_mu_);
    stop_cv_.wait_for(lk, all ? std::chrono::seconds(10) : std::chrono::milliseconds(300), [&] { return stop_.load(); });
  }
}

void PaxosReplicator::FillStatus(v1::StatusResponse* out) const {
  ReplicaStatus st = replica_->GetStatus();
  out->set_id(st.id);
  out->set_role(server::RoleProto(role()));
  out->set_epoch(st.epoch);
  out->set_promised_epoch(st.promised_epoch);
  wire::ToWire(st.watermark, out->mutable_watermark());
  wire::ToWire(st.replayed, out->mutable_replayed());
  for (size_t t = 0; t < st.streams.size(); t++) {
    const StreamStatus& s = st.streams[t];
    auto* w = out->add_streams();
    w->set_stream(static_cast<uint32_t>(t));
    w->set_first_slot(s.first_slot);
    w->set_next_slot(s.next_slot);
    w->set_committed_slot(s.committed_slot);
    wire::ToWire(s.committed_key, w->mutable_committed_key());
    wire::ToWire(s.replayed_key, w->mutable_replayed_key());
  }
  out->set_leader_id(st.leader_id);
  out->set_leader_address(st.leader_address);
  if (st.decided) wire::ToWire(*st.decided, out->mutable_decided());
  out->set_decider(DeciderName(replica_->options().decider));
  out->set_durability(server::DurabilityName(o_.config.durability));
  out->set_data_dir(o_.config.data_dir);
  out->set_recovery(st.durability);
  out->set_data_loss_suspected(st.data_loss_suspected);
  out->set_data_loss_reason(st.data_loss_reason);
  std::lock_guard<std::mutex> g(members_mu_);
  // The voting members of the configuration in force (membership.h).
  for (const MemberAddr& p : st.members) {
    v1::Member m;
    if (p.id == o_.config.id) {
      m = Self();
    } else if (auto it = members_.find(p.id); it != members_.end()) {
      m = it->second;
    } else {
      m.set_id(p.id);
    }
    m.set_address(p.address);
    *out->add_members() = m;
  }
}

grpc::Status PaxosReplicator::PrepareFailover(const v1::PrepareFailoverRequest& req, v1::PrepareFailoverResponse* resp) {
  PrepareResult r;
  Status s = replica_->PrepareFailover(req.new_epoch(), FromProto(req.last_decided()), &r);
  if (!s.ok()) return ToGrpc(s);
  wire::ToWire(r.proposed, resp->mutable_proposed());
  for (uint32_t id : r.promised_by) resp->add_promised_by(id);
  return grpc::Status::OK;
}

grpc::Status PaxosReplicator::DecideEpoch(const v1::DecideEpochRequest& req, v1::DecideEpochResponse* resp) {
  bool decided = false;
  DecidedPtr current;
  Status s = replica_->DecideEpoch(FromProto(req.record()), req.expected_previous_epoch(), &decided, &current);
  if (!s.ok()) return ToGrpc(s);
  resp->set_decided(decided);
  if (current) wire::ToWire(*current, resp->mutable_current());
  return grpc::Status::OK;
}

grpc::Status PaxosReplicator::OpenEpoch(const v1::OpenEpochRequest& req, v1::OpenEpochResponse* resp) {
  LogKey g;
  Status s = replica_->OpenEpoch(FromProto(req.record()), &g);
  if (!s.ok()) return ToGrpc(s);
  wire::ToWire(g, resp->mutable_watermark());
  return grpc::Status::OK;
}

grpc::Status PaxosReplicator::AnnounceLeader(const v1::AnnounceLeaderRequest& req, v1::AnnounceLeaderResponse*) {
  return ToGrpc(replica_->AnnounceLeader(FromProto(req.record()), req.leader_client_address()));
}

grpc::Status PaxosReplicator::ChangeMembership(const v1::ChangeMembershipRequest& req,
                                               v1::ChangeMembershipResponse* resp) {
  std::vector<MemberAddr> target;
  for (const v1::Member& m : req.members()) target.push_back(MemberAddr{m.id(), m.address()});
  DecidedPtr now;
  Status s = replica_->ChangeMembership(target, o_.membership_timeout, &now);
  if (!s.ok()) return ToGrpc(s);
  {
    // Where the request says the members' admin and client APIs are (a new
    // member's Hello may not have come yet): Status lists them.
    std::lock_guard<std::mutex> g(members_mu_);
    for (const v1::Member& m : req.members()) {
      if (m.id() == o_.config.id || (m.admin_address().empty() && m.client_address().empty())) continue;
      auto& known = members_[m.id()];
      if (known.admin_address().empty()) known = m;
    }
  }
  resp->set_config(now ? now->config : 0);
  for (const MemberAddr& m : replica_->Configuration()) {
    auto* w = resp->add_members();
    w->set_id(m.id);
    w->set_address(m.address);
  }
  return grpc::Status::OK;
}

// ---------------------------------------------------------------------------
// Built-in election (--election=builtin): without the operator or rolisctl,
// a member that has heard nothing from an open leader for the election
// timeout (plus a random part, so that members rarely start together:
// ElectionTimer) runs
// the failover itself: the same PrepareFailover / DecideEpoch / OpenEpoch.

void PaxosReplicator::ElectionLoop() {
  NameThisThread("rolis-election");
  ElectionTimer timer(o_.election_timeout, o_.config.id * 1000003ull ^ MonotonicNanos(), SteadyClock::now());
  while (!stop_.load()) {
    {
      std::unique_lock<std::mutex> lk(stop_mu_);
      stop_cv_.wait_for(lk, std::chrono::milliseconds(kElectionCheckMillis), [&] { return stop_.load(); });
    }
    if (stop_.load()) return;
    Role r = replica_->role();
    bool exempt = r == Role::kLeader || r == Role::kCatchingUp;
    if (!timer.Due(SteadyClock::now(), replica_->last_leader_contact(), exempt)) continue;
    grpc::Status s = RunElection();
    if (s.ok()) {
      spdlog::info("election: this member leads epoch {}", replica_->epoch());
    } else {
      spdlog::info("election: {} ({})", s.error_message(), static_cast<int>(s.error_code()));
    }
    timer.Restart(SteadyClock::now());
  }
}

grpc::Status PaxosReplicator::RunElection() {
  ReplicaStatus st = replica_->GetStatus();
  Decided last = st.decided ? *st.decided : Decided{};
  uint64_t e = std::max({st.promised_epoch, st.epoch, last.record.epoch}) + 1;
  v1::PrepareFailoverRequest pr;
  pr.set_new_epoch(e);
  wire::ToWire(last, pr.mutable_last_decided());
  if (!st.decided) pr.clear_last_decided();
  v1::PrepareFailoverResponse presp;
  grpc::Status s = PrepareFailover(pr, &presp);
  if (!s.ok()) return s;
  v1::DecideEpochRequest dr;
  *dr.mutable_record() = presp.proposed();
  dr.set_expected_previous_epoch(last.record.epoch);
  v1::DecideEpochResponse dresp;
  s = DecideEpoch(dr, &dresp);
  if (!s.ok() || !dresp.decided()) {
    replica_->AbandonCandidacy(e);
    if (!s.ok()) return s;
    return grpc::Status(grpc::StatusCode::ABORTED, "another record was decided first");
  }
  v1::OpenEpochRequest orq;
  *orq.mutable_record() = presp.proposed();
  v1::OpenEpochResponse oresp;
  return OpenEpoch(orq, &oresp);
}

}  // namespace rolis::replication
