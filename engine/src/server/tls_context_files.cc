#include "server/tls_context_files.h"

#include <openssl/err.h>
#include <sys/socket.h>

#include <cerrno>

namespace rolis::server {
namespace {

// The socket BIO's write with MSG_NOSIGNAL; everything else is the socket
// BIO's own.
int WriteWithoutSigpipe(BIO* bio, const char* data, int len) {
  int fd = -1;
  BIO_get_fd(bio, &fd);
  errno = 0;
  const int rc = static_cast<int>(::send(fd, data, static_cast<size_t>(len), MSG_NOSIGNAL));
  BIO_clear_retry_flags(bio);
  if (rc <= 0 && BIO_sock_should_retry(rc)) BIO_set_retry_write(bio);
  return rc;
}

const BIO_METHOD* SocketWithoutSigpipe() {
  static BIO_METHOD* method = [] {
    const BIO_METHOD* socket = BIO_s_socket();
    BIO_METHOD* m = BIO_meth_new(BIO_TYPE_SOCKET, "socket without SIGPIPE");
    if (m == nullptr) return m;
    BIO_meth_set_write(m, WriteWithoutSigpipe);
    BIO_meth_set_read(m, BIO_meth_get_read(socket));
    BIO_meth_set_puts(m, BIO_meth_get_puts(socket));
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(socket));
    BIO_meth_set_create(m, BIO_meth_get_create(socket));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(socket));
    return m;
  }();
  return method;
}

}  // namespace

bool AttachSocket(SSL* ssl, int fd) {
  const BIO_METHOD* method = SocketWithoutSigpipe();
  BIO* bio = method ? BIO_new(method) : nullptr;
  if (bio == nullptr) return false;
  BIO_set_fd(bio, fd, BIO_NOCLOSE);
  SSL_set_bio(ssl, bio, bio);
  return true;
}

std::string OpenSslError(const std::string& what) {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return what;
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return what + ": " + buf;
}

std::shared_ptr<SSL_CTX> TlsContextFiles::Get(std::string* error) {
  std::lock_guard<std::mutex> g(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (!ctx_ || now - loaded_ >= spec_.refresh) {
    if (auto fresh = Load(error)) ctx_ = std::move(fresh);  // else the last good one
    loaded_ = now;
  }
  return ctx_;
}

std::shared_ptr<SSL_CTX> TlsContextFiles::Load(std::string* error) const {
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(spec_.server ? TLS_server_method() : TLS_client_method()), SSL_CTX_free);
  if (!ctx) {
    *error = OpenSslError("cannot create a TLS context");
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx.get(), spec_.min_version);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), spec_.cert.c_str()) != 1) {
    *error = OpenSslError("cannot use --tls-cert " + spec_.cert);
    return nullptr;
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), spec_.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    *error = OpenSslError("cannot use --tls-key " + spec_.key);
    return nullptr;
  }
  if (spec_.ca.empty()) {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  } else {
    if (SSL_CTX_load_verify_locations(ctx.get(), spec_.ca.c_str(), nullptr) != 1) {
      *error = OpenSslError("cannot use --tls-ca " + spec_.ca);
      return nullptr;
    }
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  if (spec_.mode != 0) SSL_CTX_set_mode(ctx.get(), spec_.mode);
  if (spec_.read_ahead) SSL_CTX_set_read_ahead(ctx.get(), 1);
  return ctx;
}

}  // namespace rolis::server
