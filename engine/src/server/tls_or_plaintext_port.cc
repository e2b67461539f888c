#include "server/tls_or_plaintext_port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grpcpp/server_posix.h>
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

Status TlsOrPlaintextPort::Start(const std::string& address) {
  std::string error;
  if (!acceptor_.Start(address, &error)) return Status::Internal(fmt::format("{} port: {}", name_, error));
  return Status::OK();
}

void TlsOrPlaintextPort::Serve(int fd) {
  const int first = PeekFirstByte(fd, kFirstByteTimeout);
  if (first == kTlsHandshakeRecord) {
    Relay(fd);
  } else if (first >= 0) {
    acceptor_.HandOver(fd, [this](int sock) {
      int one = 1;
      ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
      plaintext_(sock);  // the socket is the receiver's now
    });
  }
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
  acceptor_.Track(back);
  std::thread up([fd, back] { Pump(fd, back); });
  Pump(back, fd);
  up.join();
  acceptor_.CloseTracked(back);
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
