#include "server/https_listener.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "server/tls_or_plaintext_port.h"

namespace rolis::server {
namespace {

constexpr size_t kMaxRequestBytes = 8192;
constexpr int kTimeoutSeconds = 10;

std::string OpenSslError(const std::string& what) {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return what;
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return what + ": " + buf;
}

}  // namespace

// The server context, loaded again from the files once `refresh` passed.
class HttpsListener::Context {
 public:
  explicit Context(HttpsFiles f) : f_(std::move(f)) {}

  std::shared_ptr<SSL_CTX> Get(std::string* error) {
    std::lock_guard<std::mutex> g(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (!ctx_ || now - loaded_ >= f_.refresh) {
      if (auto fresh = Load(error)) ctx_ = std::move(fresh);  // else the last good one (a rotation half written)
      loaded_ = now;
    }
    return ctx_;
  }

 private:
  std::shared_ptr<SSL_CTX> Load(std::string* error) {
    std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
    if (!ctx) {
      *error = OpenSslError("cannot create a TLS context");
      return nullptr;
    }
    SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), f_.cert.c_str()) != 1) {
      *error = OpenSslError("cannot use --tls-cert " + f_.cert);
      return nullptr;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx.get(), f_.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx.get()) != 1) {
      *error = OpenSslError("cannot use --tls-key " + f_.key);
      return nullptr;
    }
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);  // no client certificate asked for
    return ctx;
  }

  HttpsFiles f_;
  std::mutex mu_;
  std::shared_ptr<SSL_CTX> ctx_;
  std::chrono::steady_clock::time_point loaded_;
};

HttpsListener::HttpsListener(HttpsFiles files, Handler handler)
    : ctx_(std::make_unique<Context>(files)), accept_plaintext_(files.accept_plaintext), handler_(std::move(handler)) {}

HttpsListener::~HttpsListener() { Stop(); }

Status HttpsListener::Start(const std::string& address) {
  std::string error;
  if (!ctx_->Get(&error)) return Status::InvalidArgument(fmt::format("metrics HTTPS: {}", error));
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument(fmt::format("metrics HTTPS: bad address {}", address));
  std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return Status::InvalidArgument(fmt::format("metrics HTTPS: cannot resolve {}: {}", address, gai_strerror(rc)));
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const bool bound = listen_fd_ >= 0 && ::bind(listen_fd_, res->ai_addr, res->ai_addrlen) == 0 &&
                     ::listen(listen_fd_, 64) == 0;
  freeaddrinfo(res);
  if (!bound) {
    const std::string why = std::strerror(errno);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
    return Status::Internal(fmt::format("metrics HTTPS server cannot listen on {}: {}", address, why));
  }
  sockaddr_in bound_addr{};
  socklen_t len = sizeof(bound_addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound_addr), &len);
  port_ = ntohs(bound_addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return Status::OK();
}

void HttpsListener::Stop() {
  if (stop_.exchange(true)) return;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept(2)
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  std::unique_lock<std::mutex> lk(mu_);
  for (int fd : open_) ::shutdown(fd, SHUT_RDWR);  // their reads and writes end at once
  idle_.wait(lk, [this] { return open_.empty(); });
}

void HttpsListener::AcceptLoop() {
  while (!stop_.load()) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stop_.load()) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // EMFILE and the like
      continue;
    }
    std::lock_guard<std::mutex> g(mu_);
    if (stop_.load() || open_.size() >= kMaxConnections) {
      ::close(fd);
      continue;
    }
    open_.insert(fd);
    std::thread([this, fd] { ServeConnection(fd); }).detach();
  }
}

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
      SSL_set_fd(ssl, fd);
      if (SSL_accept(ssl) == 1) {
        Answer([ssl](char* buf, int len) { return SSL_read(ssl, buf, len); },
               [ssl](const char* buf, int len) { return SSL_write(ssl, buf, len); });
        SSL_shutdown(ssl);
      }
      SSL_free(ssl);
    }
    ERR_clear_error();
  }
  std::lock_guard<std::mutex> g(mu_);
  ::close(fd);
  open_.erase(fd);
  if (open_.empty()) idle_.notify_all();
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
