// One public port that takes both TLS and plaintext connections, for
// --tls-accept-plaintext (docs/operations.md, "Turning TLS on or off for a
// running cluster"): while a cluster moves between plaintext and mutual TLS,
// a member must serve callers of both kinds on the same port.
//
// gRPC C++ (1.51) cannot serve both on one port, so this front owns the
// port and looks at each connection's first byte: 0x16 opens a TLS
// handshake (a TLS record of type "handshake"); every plaintext protocol
// served here starts otherwise (HTTP/2's "PRI * HTTP/2.0", the accept
// stream's "ROLISAS1", an HTTP request line). A plaintext connection is
// handed over as a socket (grpc::AddInsecureChannelFromFd: no copy); a TLS
// connection is relayed to the gRPC server's TLS port on 127.0.0.1 (gRPC has
// no API to hand it a TLS socket), one thread per connection. The front
// only runs during a transition, so the relay's cost is paid for one
// rollout.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "rolis/status.h"
#include "server/tcp_acceptor.h"

namespace rolis::server {

inline constexpr unsigned char kTlsHandshakeRecord = 0x16;

// The first byte the peer sent on `fd`, without taking it from the socket
// (MSG_PEEK), waiting at most `timeout`; -1 when none came (closed, timed
// out or an error).
int PeekFirstByte(int fd, std::chrono::milliseconds timeout);

class TlsOrPlaintextPort {
 public:
  // Takes a plaintext connection's socket (the first byte is still unread).
  using Handoff = std::function<void(int fd)>;
  // At most this many connections are being sorted or relayed at once;
  // beyond, a new one is closed at once.
  static constexpr int kMaxConnections = 1024;
  // A connection that sends nothing for this long is closed.
  static constexpr std::chrono::seconds kFirstByteTimeout{10};

  // `name` names the port in log lines ("client", "admin", "replication").
  TlsOrPlaintextPort(std::string name, Handoff plaintext, int tls_backend_port)
      : name_(std::move(name)),
        plaintext_(std::move(plaintext)),
        tls_backend_port_(tls_backend_port),
        acceptor_(kMaxConnections, {}, [this](int fd) { Serve(fd); }) {}
  ~TlsOrPlaintextPort() { Stop(); }

  Status Start(const std::string& address);
  int port() const { return acceptor_.port(); }
  // Closes the port and every relayed connection; returns when their
  // threads are done. Plaintext connections handed over are the gRPC
  // server's from then on.
  void Stop() { acceptor_.Stop(); }

 private:
  void Serve(int fd);
  void Relay(int fd);

  std::string name_;
  Handoff plaintext_;
  int tls_backend_port_;
  TcpAcceptor acceptor_;  // tracks the sockets being sorted or relayed (and their relayed twins)
};

// Builds and starts `b`'s server at `address` with `creds`. With
// `accept_plaintext` (TLS credentials), the server's TLS port is
// 127.0.0.1:<any> and *front owns `address`, handing plaintext connections
// to the server; without, the server listens at `address` itself. *port:
// the public port.
Status StartGrpcServer(grpc::ServerBuilder& b, const std::string& address,
                       const std::shared_ptr<grpc::ServerCredentials>& creds, bool accept_plaintext,
                       const std::string& name, std::unique_ptr<grpc::Server>* server,
                       std::unique_ptr<TlsOrPlaintextPort>* front, int* port);

}  // namespace rolis::server
