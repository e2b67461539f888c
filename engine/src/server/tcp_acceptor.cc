#include "server/tcp_acceptor.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace rolis::server {

int ListenTcp(const std::string& address, int* port, std::string* error, ListenOptions options) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    *error = fmt::format("bad address {} (want host:port)", address);
    return -1;
  }
  std::string host = address.substr(0, colon), service = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = options.ipv4_only ? AF_INET : AF_UNSPEC;
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
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, options.backlog) != 0) {
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

bool TcpAcceptor::Start(const std::string& address, std::string* error) {
  listen_fd_ = ListenTcp(address, &port_, error, listen_);
  if (listen_fd_ < 0) return false;
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return true;
}

void TcpAcceptor::Stop() {
  if (stop_.exchange(true)) return;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept(2)
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  std::unique_lock<std::mutex> lk(mu_);
  for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
  idle_.wait(lk, [this] { return serving_ == 0; });
}

void TcpAcceptor::AcceptLoop() {
  while (!stop_.load()) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stop_.load()) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // EMFILE and the like
      continue;
    }
    std::lock_guard<std::mutex> g(mu_);
    if (stop_.load() || serving_ >= max_connections_) {
      ::close(fd);
      continue;
    }
    open_.insert(fd);
    serving_++;
    std::thread([this, fd] { Run(fd); }).detach();
  }
}

void TcpAcceptor::Run(int fd) {
  serve_(fd);
  std::lock_guard<std::mutex> g(mu_);
  if (open_.erase(fd) != 0) ::close(fd);  // else handed over
  if (--serving_ == 0) idle_.notify_all();
}

bool TcpAcceptor::HandOver(int fd, const std::function<void(int)>& take) {
  std::lock_guard<std::mutex> g(mu_);
  if (stop_.load()) return false;
  open_.erase(fd);
  take(fd);
  return true;
}

void TcpAcceptor::Track(int fd) {
  std::lock_guard<std::mutex> g(mu_);
  open_.insert(fd);
  if (stop_.load()) ::shutdown(fd, SHUT_RDWR);
}

void TcpAcceptor::CloseTracked(int fd) {
  std::lock_guard<std::mutex> g(mu_);
  open_.erase(fd);
  ::close(fd);
}

}  // namespace rolis::server
