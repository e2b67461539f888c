#include "server/tls_or_plaintext_port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grpcpp/server_posix.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rolis::server {

int PeekFirstByte(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return -1;
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return -1;
    unsigned char b = 0;
    const ssize_t n = ::recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 1) return b;
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    return -1;  // closed before a byte, or an error
  }
}

int ListenTcp(const std::string& address, int* port, std::string* error) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    *error = fmt::format("bad address {} (want host:port)", address);
    return -1;
  }
  std::string host = address.substr(0, colon), service = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    *error = fmt::format("cannot resolve {}: {}", address, gai_strerror(rc));
    return -1;
  }
  int fd = -1;
  std::string why = "no address";
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 256) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    *error = fmt::format("cannot listen on {}: {}", address, why);
    return -1;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  *port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

Status TlsOrPlaintextPort::Start(const std::string& address) {
  std::string error;
  listen_fd_ = ListenTcp(address, &port_, &error);
  if (listen_fd_ < 0) return Status::Internal(fmt::format("{} port: {}", name_, error));
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return Status::OK();
}

void TlsOrPlaintextPort::Stop() {
  if (stop_.exchange(true)) return;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept(2)
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  std::unique_lock<std::mutex> lk(mu_);
  for (int fd : open_) ::shutdown(fd, SHUT_RDWR);  // their reads end at once
  idle_.wait(lk, [this] { return serving_ == 0; });
}

void TlsOrPlaintextPort::AcceptLoop() {
  while (!stop_.load()) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stop_.load()) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // EMFILE and the like
      continue;
    }
    std::lock_guard<std::mutex> g(mu_);
    if (stop_.load() || serving_ >= kMaxConnections) {
      ::close(fd);
      continue;
    }
    open_.insert(fd);
    serving_++;
    std::thread([this, fd] { Serve(fd); }).detach();
  }
}

void TlsOrPlaintextPort::Serve(int fd) {
  const int first = PeekFirstByte(fd, kFirstByteTimeout);
  bool handed = false;
  if (first == kTlsHandshakeRecord) {
    Relay(fd);
  } else if (first >= 0) {
    std::lock_guard<std::mutex> g(mu_);
    if (!stop_.load()) {
      open_.erase(fd);
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      plaintext_(fd);  // the socket is the receiver's now
      handed = true;
    }
  }
  std::lock_guard<std::mutex> g(mu_);
  if (!handed) {
    open_.erase(fd);
    ::close(fd);
  }
  if (--serving_ == 0) idle_.notify_all();
}

namespace {

// Copies one direction until EOF or an error, then ends the other side's
// writing (so the peer sees the end) and stops reading.
void Pump(int from, int to) {
  char buf[64 << 10];
  for (;;) {
    const ssize_t n = ::read(from, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    ssize_t done = 0;
    while (done < n) {
      const ssize_t w = ::send(to, buf + done, static_cast<size_t>(n - done), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        done = -1;
        break;
      }
      done += w;
    }
    if (done < 0) break;
  }
  ::shutdown(to, SHUT_WR);
  ::shutdown(from, SHUT_RD);
}

}  // namespace

void TlsOrPlaintextPort::Relay(int fd) {
  const int back = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(tls_backend_port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (back < 0 || ::connect(back, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    spdlog::warn("{} port: cannot relay a TLS connection to 127.0.0.1:{}: {}", name_, tls_backend_port_,
                 std::strerror(errno));
    if (back >= 0) ::close(back);
    return;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ::setsockopt(back, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  {
    std::lock_guard<std::mutex> g(mu_);
    open_.insert(back);
    if (stop_.load()) ::shutdown(back, SHUT_RDWR);
  }
  std::thread up([fd, back] { Pump(fd, back); });
  Pump(back, fd);
  up.join();
  std::lock_guard<std::mutex> g(mu_);
  open_.erase(back);
  ::close(back);
}

Status StartGrpcServer(grpc::ServerBuilder& b, const std::string& address,
                       const std::shared_ptr<grpc::ServerCredentials>& creds, bool accept_plaintext,
                       const std::string& name, std::unique_ptr<grpc::Server>* server,
                       std::unique_ptr<TlsOrPlaintextPort>* front, int* port) {
  int grpc_port = 0;
  b.AddListeningPort(accept_plaintext ? "127.0.0.1:0" : address, creds, &grpc_port);
  *server = b.BuildAndStart();
  if (!*server || grpc_port == 0) return Status::Internal(fmt::format("cannot listen on {}", address));
  if (!accept_plaintext) {
    *port = grpc_port;
    return Status::OK();
  }
  grpc::Server* s = server->get();
  *front = std::make_unique<TlsOrPlaintextPort>(name, [s](int fd) { grpc::AddInsecureChannelFromFd(s, fd); },
                                               grpc_port);
  if (Status st = (*front)->Start(address); !st.ok()) return st;
  *port = (*front)->port();
  spdlog::info("{} port {}: TLS and plaintext (--tls-accept-plaintext; TLS relayed to 127.0.0.1:{})", name, *port,
               grpc_port);
  return Status::OK();
}

}  // namespace rolis::server
