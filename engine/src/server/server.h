// RolisServer: one rolisd member put together — the engine, the replicator
// (the standalone one without --peers, else the one MakeReplicator makes),
// the Node, the client and admin gRPC servers (with the standard health
// service) and the HTTP metrics endpoint.
//
// Life cycle: Start() → serving → Shutdown() (graceful, see Shutdown) → the
// destructor frees the engine.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>

#include "rolis/db.h"
#include "server/authz.h"
#include "server/config.h"
#include "server/http.h"
#include "server/tls_or_plaintext_port.h"
#include "server/metrics.h"
#include "server/node.h"
#include "server/replicator.h"
#include "server/service.h"

namespace rolis::server {

// The version compiled in (ROLIS_VERSION).
const char* Version();

// Server credentials from the TLS settings: insecure without --tls-cert;
// otherwise TLS from files watched for changes (cert-manager rotation), and
// client certificates required and verified against --tls-ca when given.
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const ServerConfig& config, std::string* error);

class RolisServer {
 public:
  // Opens the engine (rolisd passes Database::Open; tests pass a fake).
  using OpenDatabase = std::function<std::unique_ptr<Database>(const Options&)>;
  // Makes the replicator of a member with --peers (rolisd passes the
  // replication layer's); without one, or without peers, the standalone one.
  using MakeReplicator = std::function<std::unique_ptr<Replicator>(const ServerConfig&)>;
  RolisServer(ServerConfig config, OpenDatabase open, MakeReplicator make_replicator = nullptr);
  ~RolisServer();

  Status Start();

  // Graceful: marks the node not ready (health NOT_SERVING, /readyz 503),
  // refuses new transactions with UNAVAILABLE, ends open ExecuteStreams after
  // their in-flight transactions, aborts open interactive transactions, then
  // shuts the gRPC servers down with `grace` for in-flight calls, and stops
  // the HTTP endpoint.
  void Shutdown(std::chrono::milliseconds grace);

  // Ports actually bound (useful with port 0).
  int client_port() const { return client_port_; }
  int admin_port() const { return admin_port_; }
  int metrics_port() const { return http_ ? http_->port() : 0; }

  Node* node() { return node_.get(); }
  Metrics* metrics() { return metrics_.get(); }
  bool ready() const;

 private:
  ServerConfig config_;
  OpenDatabase open_;
  MakeReplicator make_replicator_;
  Authorizer authz_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<MemoryGuard> memory_guard_;  // outlives node_
  std::unique_ptr<Replicator> replicator_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<Node> node_;
  std::unique_ptr<ClientService> client_service_;
  std::unique_ptr<AdminService> admin_service_;
  std::unique_ptr<grpc::Server> client_server_;
  std::unique_ptr<grpc::Server> admin_server_;
  std::unique_ptr<TlsOrPlaintextPort> client_front_, admin_front_;  // --tls-accept-plaintext
  std::unique_ptr<HttpServer> http_;
  int client_port_ = 0;
  int admin_port_ = 0;
  std::atomic<bool> serving_{false};
  bool shut_down_ = false;
};

}  // namespace rolis::server
