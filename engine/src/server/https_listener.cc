#include "server/https_listener.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include "server/tls_context_files.h"
#include "server/tls_or_plaintext_port.h"

namespace rolis::server {
namespace {

constexpr size_t kMaxRequestBytes = 8192;
constexpr int kTimeoutSeconds = 10;

}  // namespace

HttpsListener::HttpsListener(HttpsFiles files, Handler handler)
    // No client certificate asked for (kubelet probes and Prometheus present none).
    : ctx_(std::make_unique<TlsContextFiles>(
          TlsContextSpec{files.cert, files.key, "", true, TLS1_2_VERSION, 0, files.refresh})),
      accept_plaintext_(files.accept_plaintext),
      handler_(std::move(handler)),
      acceptor_(kMaxConnections, {.ipv4_only = true, .backlog = 64}, [this](int fd) { ServeConnection(fd); }) {}

HttpsListener::~HttpsListener() { Stop(); }

Status HttpsListener::Start(const std::string& address) {
  std::string error;
  if (!ctx_->Get(&error)) return Status::InvalidArgument(fmt::format("metrics HTTPS: {}", error));
  if (!acceptor_.Start(address, &error)) return Status::Internal(fmt::format("metrics HTTPS: {}", error));
  return Status::OK();
}

void HttpsListener::Stop() { acceptor_.Stop(); }

void HttpsListener::ServeConnection(int fd) {
  timeval tv{kTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (accept_plaintext_ &&
      PeekFirstByte(fd, std::chrono::seconds(kTimeoutSeconds)) != static_cast<int>(kTlsHandshakeRecord)) {
    Answer([fd](char* buf, int len) { return static_cast<int>(::recv(fd, buf, static_cast<size_t>(len), 0)); },
           [fd](const char* buf, int len) {
             return static_cast<int>(::send(fd, buf, static_cast<size_t>(len), MSG_NOSIGNAL));
           });
  } else {
    std::string error;
    std::shared_ptr<SSL_CTX> ctx = ctx_->Get(&error);
    SSL* ssl = ctx ? SSL_new(ctx.get()) : nullptr;
    if (ssl != nullptr) {
      if (AttachSocket(ssl, fd) && SSL_accept(ssl) == 1) {
        Answer([ssl](char* buf, int len) { return SSL_read(ssl, buf, len); },
               [ssl](const char* buf, int len) { return SSL_write(ssl, buf, len); });
        SSL_shutdown(ssl);
      }
      SSL_free(ssl);
    }
    ERR_clear_error();
  }
}

void HttpsListener::Answer(const std::function<int(char* buf, int len)>& read,
                           const std::function<int(const char*, int)>& write) {
  std::string req;
  char buf[1024];
  // The whole request within the time, however slowly it trickles in.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kTimeoutSeconds);
  while (req.find("\r\n\r\n") == std::string::npos && req.size() < kMaxRequestBytes &&
         std::chrono::steady_clock::now() < deadline) {
    const int n = read(buf, sizeof(buf));
    if (n <= 0) break;
    req.append(buf, static_cast<size_t>(n));
  }
  HttpResponse resp;
  const size_t line_end = req.find("\r\n");
  const size_t sp1 = req.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? std::string::npos : req.find(' ', sp1 + 1);
  if (line_end == std::string::npos || sp2 == std::string::npos || sp2 > line_end) {
    resp = HttpResponse{400, "Bad Request", "text/plain; charset=utf-8", "bad request\n", false};
  } else {
    std::string method = req.substr(0, sp1), path = req.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    resp = handler_(method, path);
  }
  std::string out = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n"
      "Connection: close\r\n\r\n",
      resp.code, resp.reason, resp.content_type, resp.body.size());
  if (!resp.head_only) out += resp.body;
  for (size_t done = 0; done < out.size();) {
    const int n = write(out.data() + done, static_cast<int>(out.size() - done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
}

}  // namespace rolis::server
