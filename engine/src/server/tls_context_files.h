// An OpenSSL context made from certificate files and made again from them
// once `refresh` has passed since the last reading (--tls-refresh-interval),
// so rotated certificates are used without a restart. A reading that fails
// (a rotation half written) keeps the last good context. Used by the metrics
// HTTPS port (https_listener.h) and the accept streams' mutual TLS
// (rolisd/tls_stream.h).
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

namespace rolis::server {

struct TlsContextSpec {
  std::string cert, key;
  // Set: the peer must present a certificate this CA signed. Empty: no
  // peer certificate asked for or verified.
  std::string ca;
  bool server = true;  // a server's context, else a client's
  int min_version = TLS1_2_VERSION;
  long mode = 0;  // SSL_CTX_set_mode bits
  std::chrono::seconds refresh{60};
  // Read what the socket holds in one read(2), not a record's header and
  // body apiece (the accept stream then takes a group of frames at once).
  bool read_ahead = false;
};

// "what: <the first queued OpenSSL error>" (just `what` when none is
// queued); the queue is cleared.
std::string OpenSslError(const std::string& what);

// SSL_set_fd, except that writes use send(MSG_NOSIGNAL): a peer that went
// away is a failed write, not a SIGPIPE that kills a process which does not
// ignore it (a test binary, an embedding program). False when OpenSSL could
// not make the BIO.
bool AttachSocket(SSL* ssl, int fd);

class TlsContextFiles {
 public:
  explicit TlsContextFiles(TlsContextSpec spec) : spec_(std::move(spec)) {}

  // The current context, read again from the files when due. Null with the
  // reason in *error when no reading ever succeeded; a failed re-reading
  // also sets *error but returns the last good context.
  std::shared_ptr<SSL_CTX> Get(std::string* error);

 private:
  std::shared_ptr<SSL_CTX> Load(std::string* error) const;

  const TlsContextSpec spec_;
  std::mutex mu_;
  std::shared_ptr<SSL_CTX> ctx_;
  std::chrono::steady_clock::time_point loaded_;
};

}  // namespace rolis::server
