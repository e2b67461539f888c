// Mutual TLS for the accept stream (accept_stream.h), with the files of the
// gRPC replication port (--tls-cert, --tls-key, --tls-ca): a member accepts
// only a peer whose certificate the CA signed, and a dialer also checks the
// peer's certificate against the host name of its --peers address, as the
// gRPC channel does. TLS 1.3 only (no renegotiation). The files are read
// again for a new connection once --tls-refresh-interval has passed since
// the last reading, so rotated certificates are used without a restart.
//
// One connection is read by one thread and written by another (the leader's
// reader and sender): an OpenSSL connection must not be used by two threads
// at once, so each call holds the stream's lock, and the socket is
// non-blocking: a thread waits in poll(2) with the lock released.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "accept_stream.h"

namespace rolis::replication {

struct TlsFiles {
  std::string cert, key, ca;
  std::chrono::seconds refresh{60};
};

// The accepting side's check of a verified peer certificate, from its URI
// SANs and subject (RFC 2253): false with the reason in *why closes the
// connection after the handshake.
using PeerCheck =
    std::function<bool(const std::vector<std::string>& uri_sans, const std::string& subject, std::string* why)>;

// False with the reason in *error when the files do not make a context
// (checked once at startup, as the gRPC credentials are). `authorize_peer`
// empty: any certificate the CA signed is served.
bool MakeTlsStreamSecurity(const TlsFiles& files, StreamSecurity* out, std::string* error,
                           PeerCheck authorize_peer = nullptr);

}  // namespace rolis::replication
