#include "peer_tls.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <unistd.h>

#include "server/server.h"
#include "server/tls_or_plaintext_port.h"
#include "tls_stream.h"

namespace rolis::replication {

bool MakePeerCredentials(const server::ServerConfig& c, PeerCredentials* out, std::string* error) {
  if (c.tls_cert.empty()) {
    out->server = grpc::InsecureServerCredentials();
    out->channel = grpc::InsecureChannelCredentials();
    out->tls = false;
    return true;
  }
  if (c.tls_ca.empty()) {
    // ParseConfig refuses this combination with --peers.
    *error = "replication over TLS needs --tls-ca (members authenticate each other)";
    return false;
  }
  // With --tls-ca the client ports' credentials already require and verify
  // a client certificate: the replication port takes the same.
  out->server = server::MakeServerCredentials(c, error);
  if (!out->server) return false;
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      c.tls_key, c.tls_cert, c.tls_ca, static_cast<unsigned>(c.tls_refresh_interval.count()));
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(provider);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  out->channel = grpc::experimental::TlsCredentials(options);
  if (!out->channel) {
    *error = "cannot create TLS channel credentials for the replication peers";
    return false;
  }
  // The accept stream's mutual TLS, from the same files (tls_stream.h).
  TlsFiles files{c.tls_cert, c.tls_key, c.tls_ca, c.tls_refresh_interval};
  PeerCheck authorize_peer;
  // Only a member may connect to the accept stream (docs/operations.md,
  // "Security model"): checked once per connection, after the handshake.
  server::Authorizer authz = server::Authorizer::FromConfig(c);
  if (authz.enabled()) {
    authorize_peer = [authz](const std::vector<std::string>& uris, const std::string& subject, std::string* why) {
      grpc::Status st =
          authz.CheckCertificate(uris, subject, server::Access::kReplication, "replication accept stream");
      if (!st.ok()) *why = st.error_message();
      return st.ok();
    };
  }
  std::string why;
  if (!MakeTlsStreamSecurity(files, &out->stream, &why, authorize_peer)) {
    *error = "replication accept stream: " + why;
    return false;
  }
  if (c.tls_accept_plaintext) {
    // The accept stream takes both: a TLS handshake opens with 0x16, the
    // plaintext preface with 'R'.
    out->stream.server = [tls = out->stream.server](int fd, std::string* error) -> std::unique_ptr<ByteStream> {
      const int first = server::PeekFirstByte(fd, std::chrono::seconds(5));
      if (first == server::kTlsHandshakeRecord) return tls(fd, error);
      if (first < 0) {
        ::close(fd);
        *error = "nothing sent within 5 s";
        return nullptr;
      }
      return WrapSocket(fd);
    };
    out->plaintext_fallback = true;
  }
  out->tls = true;
  return true;
}

}  // namespace rolis::replication
