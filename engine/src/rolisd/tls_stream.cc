#include "tls_stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>

#include "server/tls_context_files.h"

namespace rolis::replication {
namespace {

using CtxPtr = std::shared_ptr<SSL_CTX>;
using server::OpenSslError;
using server::TlsContextFiles;

class TlsStream final : public ByteStream {
 public:
  TlsStream(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ~TlsStream() override {
    SSL_free(ssl_);
    ::close(fd_);
  }

  // The handshake, within `timeout`. False with the reason in *error.
  bool Handshake(bool server, std::chrono::milliseconds timeout, std::string* error) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      ERR_clear_error();
      const int rc = server ? SSL_accept(ssl_) : SSL_connect(ssl_);
      if (rc == 1) return true;
      const int e = SSL_get_error(ssl_, rc);
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !WaitToRetry(e, static_cast<int>(left.count()))) {
        std::string why = OpenSslError("TLS handshake failed");
        const long verify = SSL_get_verify_result(ssl_);
        if (verify != X509_V_OK) why += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
        if (left.count() <= 0) why = "TLS handshake timed out";
        *error = why;
        return false;
      }
    }
  }

  // The parts are gathered into one buffer and written by one SSL_write:
  // a frame is several parts (FrameConn::WriteFrame) and a group of replies
  // two per frame, and a record per part made every part a record, a send
  // and a take of the lock the reader also holds (docs/replication.md,
  // "Security": TLS on the accept stream).
  bool WriteAll(const iovec* parts, int n) override {
    std::lock_guard<std::mutex> w(write_mu_);  // out_ is the writer's
    out_.clear();
    for (int i = 0; i < n; i++) out_.append(static_cast<const char*>(parts[i].iov_base), parts[i].iov_len);
    const char* p = out_.data();
    size_t left = out_.size();
    while (left > 0) {
      std::unique_lock<std::mutex> lk(mu_);
      if (dead_) return false;
      ERR_clear_error();
      const int rc = SSL_write(ssl_, p, static_cast<int>(std::min<size_t>(left, 1 << 30)));
      if (rc > 0) {
        p += rc;
        left -= static_cast<size_t>(rc);
        continue;
      }
      const int e = SSL_get_error(ssl_, rc);
      lk.unlock();
      if (!WaitToRetry(e, -1)) return false;
    }
    if (out_.capacity() > kKeptWriteBuffer) std::string().swap(out_);
    return true;
  }

  // As many bytes as are decrypted or buffered (read-ahead) up to len, so
  // that one call takes a group of frames, as read(2) does on a plain socket
  // (the accept stream groups the frames it finds buffered).
  size_t ReadSome(char* buf, size_t len) override {
    for (;;) {
      std::unique_lock<std::mutex> lk(mu_);
      if (dead_) return 0;
      ERR_clear_error();
      const int rc = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(len, 1 << 30)));
      if (rc > 0) {
        size_t got = static_cast<size_t>(rc);
        while (got < len && SSL_has_pending(ssl_)) {
          ERR_clear_error();
          const int more = SSL_read(ssl_, buf + got, static_cast<int>(std::min<size_t>(len - got, 1 << 30)));
          if (more <= 0) break;  // a partial record: the next call waits for it
          got += static_cast<size_t>(more);
        }
        return got;
      }
      const int e = SSL_get_error(ssl_, rc);
      lk.unlock();
      if (!WaitToRetry(e, -1)) return 0;
    }
  }

  void Shutdown() override {
    {
      std::lock_guard<std::mutex> g(mu_);
      dead_ = true;
    }
    ::shutdown(fd_, SHUT_RDWR);  // wakes a thread in poll
  }

 private:
  // After an OpenSSL call failed with `ssl_error`: false unless it only
  // wants the socket readable or writable, else waits (the lock released)
  // until it is, up to timeout_ms (-1: no limit); false when the socket is
  // closed, broken or the time is up.
  bool WaitToRetry(int ssl_error, int timeout_ms) {
    if (ssl_error != SSL_ERROR_WANT_READ && ssl_error != SSL_ERROR_WANT_WRITE) return false;
    pollfd p{fd_, static_cast<short>(ssl_error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
    for (;;) {
      const int rc = ::poll(&p, 1, timeout_ms);
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) return false;
      if (p.revents & (POLLERR | POLLNVAL)) return false;
      // POLLHUP with data still buffered: let SSL_read take it and see the end.
      return true;
    }
  }

  static constexpr size_t kKeptWriteBuffer = size_t{1} << 20;

  int fd_;
  SSL* ssl_;
  std::mutex mu_;  // one OpenSSL call at a time
  bool dead_ = false;
  std::mutex write_mu_;  // one writer at a time owns out_
  std::string out_;
};

// The URI SANs and the subject of the peer's certificate (after a handshake
// that verified it).
void PeerNames(SSL* ssl, std::vector<std::string>* uris, std::string* subject) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr) return;
  if (auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr))) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
      const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
      if (n->type != GEN_URI) continue;
      const ASN1_IA5STRING* s = n->d.uniformResourceIdentifier;
      uris->emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)), ASN1_STRING_length(s));
    }
    GENERAL_NAMES_free(names);
  }
  if (BIO* bio = BIO_new(BIO_s_mem())) {
    if (X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
      char* data = nullptr;
      long len = BIO_get_mem_data(bio, &data);
      if (len > 0) subject->assign(data, static_cast<size_t>(len));
    }
    BIO_free(bio);
  }
}

// The socket made non-blocking and wrapped, after a handshake; null with the
// reason in *error (the socket then closed).
std::unique_ptr<ByteStream> Wrap(TlsContextFiles& cache, int fd, bool server, const std::string& peer_host,
                                 const PeerCheck& authorize_peer, std::string* error) {
  TuneSocket(fd);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  CtxPtr ctx = cache.Get(error);
  SSL* ssl = ctx ? SSL_new(ctx.get()) : nullptr;
  if (!ssl) {
    if (ctx) *error = OpenSslError("cannot create a TLS connection");
    ::close(fd);
    return nullptr;
  }
  auto stream = std::make_unique<TlsStream>(fd, ssl);
  if (!server::AttachSocket(ssl, fd)) {
    *error = OpenSslError("cannot attach the socket to TLS");
    return nullptr;
  }
  if (!server) {
    // The peer's certificate must name the host of its --peers address.
    in6_addr ip;
    const bool literal =
        inet_pton(AF_INET, peer_host.c_str(), &ip) == 1 || inet_pton(AF_INET6, peer_host.c_str(), &ip) == 1;
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const int ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(param, peer_host.c_str())
                           : X509_VERIFY_PARAM_set1_host(param, peer_host.c_str(), 0);
    if (ok != 1) {
      *error = "cannot verify against host " + peer_host;
      return nullptr;
    }
    if (!literal) SSL_set_tlsext_host_name(ssl, peer_host.c_str());
  }
  if (!stream->Handshake(server, std::chrono::milliseconds(5000), error)) return nullptr;
  if (server && authorize_peer) {
    std::vector<std::string> uris;
    std::string subject;
    PeerNames(ssl, &uris, &subject);
    std::string why;
    if (!authorize_peer(uris, subject, &why)) {
      *error = why;
      return nullptr;
    }
  }
  return stream;
}

}  // namespace

bool MakeTlsStreamSecurity(const TlsFiles& files, StreamSecurity* out, std::string* error, PeerCheck authorize_peer) {
  // Both sides present a certificate and verify the other's.
  server::TlsContextSpec spec{files.cert, files.key, files.ca, true, TLS1_3_VERSION,
                              SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, files.refresh,
                              /*read_ahead=*/true};
  auto server = std::make_shared<TlsContextFiles>(spec);
  spec.server = false;
  auto client = std::make_shared<TlsContextFiles>(spec);
  if (!server->Get(error) || !client->Get(error)) return false;
  out->server = [server, authorize_peer](int fd, std::string* error) {
    return Wrap(*server, fd, true, "", authorize_peer, error);
  };
  out->client = [client](int fd, const std::string& host, std::string* error) {
    return Wrap(*client, fd, false, host, nullptr, error);
  };
  return true;
}

}  // namespace rolis::replication
