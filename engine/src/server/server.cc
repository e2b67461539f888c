#include "server/server.h"

#include <fmt/format.h>
#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>

#include "core/clock.h"

namespace rolis::server {

namespace {

bool Readable(const std::string& path) {
  std::ifstream f(path);
  return f.good();
}

std::string GrpcAddress(const std::string& address) {
  // gRPC understands host:port, [v6]:port and 0.0.0.0:port as they are.
  return address;
}

}  // namespace

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const ServerConfig& c, std::string* error) {
  if (c.tls_cert.empty()) return grpc::InsecureServerCredentials();
  for (const std::string* f : {&c.tls_cert, &c.tls_key}) {
    if (!Readable(*f)) {
      *error = fmt::format("TLS file {} cannot be read", *f);
      return nullptr;
    }
  }
  if (!c.tls_ca.empty() && !Readable(c.tls_ca)) {
    *error = fmt::format("TLS CA file {} cannot be read", c.tls_ca);
    return nullptr;
  }
  // The provider re-reads the files every refresh interval, so certificates
  // rotated in place (cert-manager secrets) are picked up without a restart.
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      c.tls_key, c.tls_cert, c.tls_ca, static_cast<unsigned>(c.tls_refresh_interval.count()));
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (!c.tls_ca.empty()) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  auto creds = grpc::experimental::TlsServerCredentials(options);
  if (!creds) *error = "cannot create TLS server credentials";
  return creds;
}

RolisServer::RolisServer(ServerConfig config, OpenDatabase open, MakeReplicator make_replicator)
    : config_(std::move(config)),
      open_(std::move(open)),
      make_replicator_(std::move(make_replicator)),
      authz_(Authorizer::FromConfig(config_)) {}

RolisServer::~RolisServer() {
  Shutdown(std::chrono::milliseconds(0));
  // Order: the services and node go before the engine they use.
  client_front_.reset();
  admin_front_.reset();
  client_server_.reset();
  admin_server_.reset();
  client_service_.reset();
  admin_service_.reset();
  node_.reset();
  db_.reset();
}

bool RolisServer::ready() const { return serving_.load() && node_ && !node_->draining(); }

Status RolisServer::Start() {
  metrics_ = std::make_unique<Metrics>(Version());

  StandaloneReplicator::Options ro;
  ro.id = config_.id != 0 ? config_.id : 1;
  ro.client_address = config_.ClientAddress();
  ro.peers_configured = config_.replicated();
  ro.streams = std::max(config_.replication_streams, config_.worker_threads);
  if (config_.replicated()) {
    for (const Peer& p : config_.peers) {
      v1::Member m;
      m.set_id(p.id);
      m.set_address(p.address);
      ro.members.push_back(m);
    }
  } else {
    v1::Member self;
    self.set_id(ro.id);
    self.set_address(ro.client_address);
    ro.members.push_back(self);
  }
  if (config_.replicated() && make_replicator_) {
    replicator_ = make_replicator_(config_);
  } else {
    replicator_ = std::make_unique<StandaloneReplicator>(ro);
  }

  Options opts;
  opts.limits.max_key_bytes = config_.max_key_bytes;
  opts.limits.max_value_bytes = config_.max_value_bytes;
  opts.limits.max_write_set = std::max<size_t>(config_.max_ops_per_txn, 1);
  opts.epoch_period_ms = config_.epoch_period_ms;
  opts.huge_pages = config_.huge_pages;
  opts.max_workers = std::max<uint32_t>(64, config_.worker_threads + 8);
  opts.commit_hook = replicator_.get();
  // The replication log carries updates of a worker's own writes as patches
  // (docs/replication.md, "Patches"); a single member logs nothing.
  opts.patch_updates = config_.replicated();
  db_ = open_(opts);
  if (!db_) return Status::Internal("the engine did not open");

  node_ = std::make_unique<Node>(NodeOptions::FromConfig(config_), db_.get(), replicator_.get(), metrics_.get());
  {
    // docs/operations.md, "Memory limit": by default the cgroup's limit.
    uint64_t limit = config_.memory_limit ? *config_.memory_limit : CgroupMemoryLimit().value_or(0);
    memory_guard_ = std::make_unique<MemoryGuard>(limit, config_.memory_high_watermark, ReadResidentBytes);
    memory_guard_->Start();
    node_->SetMemoryGuard(memory_guard_.get());
    if (limit != 0) {
      spdlog::info("memory limit {} MiB{}: writes that add data are refused from {} MiB (now {} MiB resident)",
                   limit >> 20, config_.memory_limit ? "" : " (the memory cgroup's)", memory_guard_->high_bytes() >> 20,
                   memory_guard_->resident() >> 20);
      // Prefaulted memory is resident from the start (docs/operations.md,
      // "Memory limit"): too much of it and every such write is refused.
      if (memory_guard_->under_pressure()) {
        spdlog::warn("resident memory at start ({} MiB{}) is above the memory watermark ({} MiB): writes that add "
                     "data are refused; lower --prefault-memory or raise the memory limit",
                     memory_guard_->resident() >> 20,
                     config_.prefault_memory != 0 ? fmt::format(", --prefault-memory {} MiB", config_.prefault_memory >> 20)
                                                  : std::string(),
                     memory_guard_->high_bytes() >> 20);
      }
    }
  }
  Status s = node_->Start(config_.worker_threads);
  if (!s.ok()) return s;
  replicator_->Attach(db_.get(), node_->worker_mutexes());
  replicator_->SetSnapshotEpochUnpinner([node = node_.get()] { return node->UnpinSnapshotEpochWithWorkersHeld(); });
  if (Status rs = replicator_->Recover(); !rs.ok()) return rs;
  replicator_->Start();
  if (!node_->multi_txn_workers()) {
    spdlog::warn(
        "the engine allows one open transaction per worker: each open interactive transaction reserves a whole "
        "worker, so at most {} may be open at once (RESOURCE_EXHAUSTED beyond)",
        std::max<size_t>(1, node_->workers() - 1));
  }

  metrics_->SetGaugeSource([this] {
    GaugeValues g;
    g.role = RoleName(replicator_->role());
    g.epoch = replicator_->epoch();
    Replicator::ReplicationLag lag = replicator_->replication_lag();
    g.stream_lag_seconds = std::move(lag.stream_lag_seconds);
    if (lag.watermark_mono_ns != 0) {
      // G's age on this host's monotonic clock, taken from the wall clock now.
      const double age = static_cast<double>(static_cast<int64_t>(core::MonotonicNanos()) - lag.watermark_mono_ns) / 1e9;
      g.watermark_unix_seconds =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() - age;
    }
    g.flow_control_wait_nanos = replicator_->flow_control_wait_nanos();
    g.accept_stream_connections = replicator_->accept_stream_connections();
    Replicator::TransferCounts transfers = replicator_->transfer_counts();
    g.state_transfers = transfers.completed;
    g.leader_snapshots = transfers.leader_snapshots;
    g.checkpoint_snapshots = transfers.checkpoint_snapshots;
    g.open_txns = node_->open_txns();
    DatabaseStats st = db_->Stats();
    g.engine_live_records = st.live_records;
    g.engine_live_versions = st.live_versions;
    g.engine_epoch = st.current_epoch;
    g.worker_threads = static_cast<uint32_t>(node_->workers());
    g.memory_limit_bytes = memory_guard_->limit();
    g.memory_resident_bytes = memory_guard_->resident();
    return g;
  });

  std::string error;
  auto creds = MakeServerCredentials(config_, &error);
  if (!creds) return Status::InvalidArgument(error);

  grpc::EnableDefaultHealthCheckService(true);
  client_service_ = std::make_unique<ClientService>(node_.get(), replicator_.get(), metrics_.get(),
                                                    config_.max_stream_inflight, &authz_);
  admin_service_ = std::make_unique<AdminService>(node_.get(), replicator_.get(), metrics_.get(), Version(), &authz_);

  {
    grpc::ServerBuilder b;
    // gRPC sets SO_REUSEPORT by default: a second rolisd on this port would
    // start and take part of the connections. It fails to start instead.
    b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    b.RegisterService(client_service_.get());
    b.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
    b.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes));
    if (Status st = StartGrpcServer(b, GrpcAddress(config_.listen), creds, config_.tls_accept_plaintext, "client",
                                    &client_server_, &client_front_, &client_port_);
        !st.ok() || client_port_ == 0) {
      return Status::Internal(fmt::format("cannot listen on {} (--listen): {}", config_.listen, st.message()));
    }
  }
  {
    grpc::ServerBuilder b;
    b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    b.RegisterService(admin_service_.get());
    b.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
    if (Status st = StartGrpcServer(b, GrpcAddress(config_.admin_listen), creds, config_.tls_accept_plaintext,
                                    "admin", &admin_server_, &admin_front_, &admin_port_);
        !st.ok() || admin_port_ == 0) {
      return Status::Internal(fmt::format("cannot listen on {} (--admin-listen): {}", config_.admin_listen,
                                          st.message()));
    }
  }

  HttpServer::Handlers h;
  h.metrics = metrics_.get();
  h.healthy = [this](std::string* detail) {
    *detail = "ok";
    return true;
  };
  h.ready = [this](std::string* detail) {
    if (!ready()) {
      *detail = node_ && node_->draining() ? "shutting down" : "starting";
      return false;
    }
    Role r = replicator_->role();
    if (r == Role::kCandidate || r == Role::kCatchingUp) {
      *detail = fmt::format("not ready: {}", RoleName(r));
      return false;
    }
    *detail = fmt::format("ready: {}", RoleName(r));
    return true;
  };
  http_ = std::make_unique<HttpServer>(h);
  HttpsFiles metrics_tls{config_.tls_cert, config_.tls_key, config_.tls_refresh_interval,
                         config_.tls_accept_plaintext};
  s = http_->Start(config_.metrics_listen, config_.metrics_tls ? &metrics_tls : nullptr);
  if (!s.ok()) return s;
  if (!config_.tls_cert.empty()) {
    spdlog::info("TLS: client and admin ports {}{}; authorization by certificate identity {}{}; metrics port {}",
                 config_.tls_ca.empty() ? "server-authenticated" : "mutual (client certificates verified)",
                 config_.tls_accept_plaintext ? ", plaintext accepted too (--tls-accept-plaintext: plaintext callers "
                                                "are not authorized by identity)"
                                              : "",
                 config_.tls_authorize ? "on" : "off",
                 config_.tls_trust_domain.empty() ? "" : " (trust domain " + config_.tls_trust_domain + ")",
                 config_.metrics_tls ? "HTTPS" : "plain HTTP");
  }

  serving_.store(true);
  for (auto* server : {client_server_.get(), admin_server_.get()}) {
    if (auto* health = server->GetHealthCheckService()) health->SetServingStatus(true);
  }
  return Status::OK();
}

void RolisServer::Shutdown(std::chrono::milliseconds grace) {
  if (shut_down_) return;
  shut_down_ = true;
  serving_.store(false);
  if (node_) node_->BeginDrain();
  for (auto* server : {client_server_.get(), admin_server_.get()}) {
    if (server != nullptr) {
      if (auto* health = server->GetHealthCheckService()) health->SetServingStatus(false);
    }
  }
  if (client_service_) client_service_->DrainStreams();
  // Transactions that committed here and whose replies wait for the
  // watermark: replication keeps running until they are acknowledged or the
  // grace period ends; stopping it then fails the rest with UNKNOWN ("outcome
  // unknown"), never with a code a client could take for "not applied".
  auto steady_deadline = std::chrono::steady_clock::now() + grace;
  if (client_service_ && !client_service_->AwaitAcks(steady_deadline)) {
    spdlog::warn("shutdown: {} replies still wait for replication after the grace period; they get UNKNOWN "
                 "(outcome unknown)",
                 client_service_->ack_waits());
  }
  // In-flight unary calls finish on their own; open interactive transactions
  // are aborted (their next call gets UNAVAILABLE).
  if (node_) node_->Stop();
  if (replicator_) replicator_->Stop();
  spdlog::debug("shutdown: draining done, stopping gRPC servers");
  // The gRPC servers get what is left of the grace period, at least 1 s to
  // send the last replies.
  auto deadline = std::chrono::system_clock::now() +
                  std::max<std::chrono::steady_clock::duration>(steady_deadline - std::chrono::steady_clock::now(),
                                                               std::chrono::seconds(grace.count() > 0 ? 1 : 0));
  // The fronts first: no plaintext connection is handed to a stopped server.
  if (client_front_) client_front_->Stop();
  if (admin_front_) admin_front_->Stop();
  if (client_server_) client_server_->Shutdown(deadline);
  if (admin_server_) admin_server_->Shutdown(deadline);
  spdlog::debug("shutdown: gRPC servers stopped, stopping HTTP");
  if (http_) http_->Stop();
  spdlog::debug("shutdown: HTTP stopped");
}

}  // namespace rolis::server
