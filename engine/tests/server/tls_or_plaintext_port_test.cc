// The front of --tls-accept-plaintext (server/tls_or_plaintext_port.h):
// connections are sorted by their first byte, TLS ones relayed to the
// backend port, plaintext ones handed over as sockets. The backend here is
// a loopback echo server: the front relays bytes and never looks into TLS.
#include "server/tls_or_plaintext_port.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "loopback_dial.h"

namespace rolis::server {
namespace {

std::string ReadN(int fd, size_t n) {
  std::string out;
  char buf[256];
  while (out.size() < n) {
    const ssize_t r = ::read(fd, buf, std::min(sizeof(buf), n - out.size()));
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

// Echoes every connection back until it closes.
class EchoServer {
 public:
  EchoServer() {
    std::string error;
    fd_ = ListenTcp("127.0.0.1:0", &port_, &error);
    EXPECT_GE(fd_, 0) << error;
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        conns_.emplace_back([c] {
          char buf[256];
          for (ssize_t n; (n = ::read(c, buf, sizeof(buf))) > 0;) {
            if (::write(c, buf, static_cast<size_t>(n)) != n) break;
          }
          ::close(c);
        });
      }
    });
  }
  ~EchoServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    for (auto& t : conns_) t.join();
    ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1, port_ = 0;
  std::thread thread_;
  std::vector<std::thread> conns_;
};

TEST(TlsOrPlaintextPortTest, RelaysTlsAndHandsPlaintextOver) {
  EchoServer backend;
  std::atomic<int> handed{0};
  std::vector<std::thread> plain;
  TlsOrPlaintextPort front(
      "test",
      [&](int fd) {
        handed++;
        // The first byte is still unread: the receiver sees the whole stream.
        plain.emplace_back([fd] {
          char buf[3];
          size_t got = 0;
          while (got < sizeof(buf)) {
            const ssize_t n = ::recv(fd, buf + got, sizeof(buf) - got, 0);
            if (n > 0) got += static_cast<size_t>(n);
            else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) std::this_thread::yield();
            else break;
          }
          const std::string reply = "plain:" + std::string(buf, got);
          (void)::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
          ::close(fd);
        });
      },
      backend.port());
  ASSERT_TRUE(front.Start("127.0.0.1:0").ok());

  const int tls = DialLoopback(front.port());
  const std::string hello = std::string(1, static_cast<char>(kTlsHandshakeRecord)) + "hello";
  ASSERT_EQ(::write(tls, hello.data(), hello.size()), static_cast<ssize_t>(hello.size()));
  EXPECT_EQ(ReadN(tls, hello.size()), hello) << "a TLS connection is relayed to the backend, bytes unchanged";

  const int pc = DialLoopback(front.port());
  ASSERT_EQ(::write(pc, "PRI", 3), 3);
  EXPECT_EQ(ReadN(pc, 9), "plain:PRI") << "a plaintext connection is handed over with its first byte unread";
  EXPECT_EQ(handed.load(), 1);

  // The relay goes on for more than one exchange, both ways.
  ASSERT_EQ(::write(tls, "again", 5), 5);
  EXPECT_EQ(ReadN(tls, 5), "again");

  // Stop ends the relayed connection (it is not left half open).
  front.Stop();
  char b;
  EXPECT_LE(::read(tls, &b, 1), 0);
  ::close(tls);
  ::close(pc);
  for (auto& t : plain) t.join();
}

TEST(TlsOrPlaintextPortTest, PeekFirstByteLeavesItAndTimesOut) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  EXPECT_EQ(PeekFirstByte(sv[0], std::chrono::milliseconds(50)), -1) << "nothing sent";
  ASSERT_EQ(::write(sv[1], "\x16x", 2), 2);
  EXPECT_EQ(PeekFirstByte(sv[0], std::chrono::milliseconds(50)), 0x16);
  char buf[2];
  EXPECT_EQ(::read(sv[0], buf, 2), 2) << "the peeked byte is still there";
  EXPECT_EQ(buf[0], '\x16');
  ::close(sv[1]);
  EXPECT_EQ(PeekFirstByte(sv[0], std::chrono::milliseconds(50)), -1) << "closed";
  ::close(sv[0]);
}

TEST(TlsOrPlaintextPortTest, AnAddressInUseIsRefused) {
  EchoServer backend;
  TlsOrPlaintextPort first("a", [](int fd) { ::close(fd); }, backend.port());
  ASSERT_TRUE(first.Start("127.0.0.1:0").ok());
  TlsOrPlaintextPort second("b", [](int fd) { ::close(fd); }, backend.port());
  Status s = second.Start("127.0.0.1:" + std::to_string(first.port()));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot listen"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rolis::server
