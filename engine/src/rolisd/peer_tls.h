// Credentials of the replication port (docs/replication.md, "TLS"). With
// --tls-cert/--tls-key/--tls-ca the replication server requires mutual TLS
// (a peer must present a certificate the CA signed, and with
// --tls-authorize a member's: docs/operations.md, "Security model", checked
// by the ReplicationService and the accept stream) and this member dials
// its peers with the same certificate, verifying theirs against the CA and
// their --peers host name. The files are re-read every
// --tls-refresh-interval, so rotated certificates are used without a
// restart. Without --tls-cert: plaintext both ways. With
// --tls-accept-plaintext both ports also take plaintext connections
// (server/tls_or_plaintext_port.h) and peers are dialed in TLS first, in
// plaintext when that fails (grpc_transport.h).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "accept_stream.h"
#include "server/config.h"

namespace rolis::replication {

struct PeerCredentials {
  std::shared_ptr<grpc::ServerCredentials> server;
  std::shared_ptr<grpc::ChannelCredentials> channel;
  // The accept stream's (accept_stream.h): set exactly when `tls` is (a
  // member with TLS never listens or dials in plaintext); empty: plaintext.
  StreamSecurity stream;
  bool tls = false;
  // --tls-accept-plaintext: calls to peers fall back to plaintext.
  bool plaintext_fallback = false;
};

// False, with the reason in *error, when a file cannot be read or gRPC
// refuses the credentials.
bool MakePeerCredentials(const server::ServerConfig& config, PeerCredentials* out, std::string* error);

}  // namespace rolis::replication
