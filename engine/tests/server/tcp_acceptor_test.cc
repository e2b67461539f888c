// The acceptor under the metrics HTTPS port and the --tls-accept-plaintext
// front (server/tcp_acceptor.h): one thread a connection, the socket closed
// after it unless handed over, a limit on connections, and Stop ending
// every tracked socket.
#include "server/tcp_acceptor.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "loopback_dial.h"

namespace rolis::server {
namespace {

// What the peer sent until it closed (or 5 s passed: then "timeout").
std::string ReadAll(int fd) {
  std::string out;
  char buf[64];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) return out + "timeout";
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

void WaitFor(const std::atomic<int>& v, int want) {
  for (int i = 0; i < 500 && v.load() != want; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(v.load(), want);
}

TEST(TcpAcceptorTest, ServesEachConnectionAndClosesItAfterwards) {
  TcpAcceptor acceptor(8, {}, [](int fd) { (void)::send(fd, "hi", 2, MSG_NOSIGNAL); });
  std::string error;
  ASSERT_TRUE(acceptor.Start("127.0.0.1:0", &error)) << error;
  for (int i = 0; i < 3; i++) {
    const int c = DialLoopback(acceptor.port());
    EXPECT_EQ(ReadAll(c), "hi") << "closed once Serve returned";
    ::close(c);
  }
}

TEST(TcpAcceptorTest, AConnectionBeyondTheLimitIsClosedAtOnce) {
  std::atomic<int> serving{0};
  TcpAcceptor acceptor(1, {}, [&](int fd) {
    serving++;
    char b;
    (void)::recv(fd, &b, 1, 0);  // until the client closes or Stop
  });
  std::string error;
  ASSERT_TRUE(acceptor.Start("127.0.0.1:0", &error)) << error;
  const int first = DialLoopback(acceptor.port());
  WaitFor(serving, 1);
  const int second = DialLoopback(acceptor.port());
  EXPECT_EQ(ReadAll(second), "") << "closed, not left waiting";
  ::close(second);
  ::close(first);
  EXPECT_EQ(serving.load(), 1);
}

TEST(TcpAcceptorTest, StopEndsServedAndTrackedSocketsAndWaitsForThem) {
  std::atomic<int> serving{0}, done{0};
  TcpAcceptor* self = nullptr;
  TcpAcceptor acceptor(8, {}, [&](int fd) {
    int twin[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, twin), 0);
    self->Track(twin[0]);
    serving++;
    char b;
    (void)::recv(fd, &b, 1, 0);
    (void)::recv(twin[0], &b, 1, 0);  // returns only once Stop shut it down
    self->CloseTracked(twin[0]);
    ::close(twin[1]);
    done++;
  });
  self = &acceptor;
  std::string error;
  ASSERT_TRUE(acceptor.Start("127.0.0.1:0", &error)) << error;
  const int a = DialLoopback(acceptor.port()), b = DialLoopback(acceptor.port());
  WaitFor(serving, 2);
  acceptor.Stop();
  EXPECT_EQ(done.load(), 2) << "Stop returns after every Serve";
  EXPECT_EQ(ReadAll(a), "");
  ::close(a);
  ::close(b);
}

TEST(TcpAcceptorTest, AHandedOverSocketStaysOpenAndStopRefusesHandOvers) {
  std::atomic<int> taken{-1};
  TcpAcceptor* self = nullptr;
  TcpAcceptor acceptor(8, {}, [&](int fd) { EXPECT_TRUE(self->HandOver(fd, [&](int s) { taken = s; })); });
  self = &acceptor;
  std::string error;
  ASSERT_TRUE(acceptor.Start("127.0.0.1:0", &error)) << error;
  const int c = DialLoopback(acceptor.port());
  for (int i = 0; i < 500 && taken.load() < 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_GE(taken.load(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // Serve has returned
  ASSERT_EQ(::write(c, "x", 1), 1);
  char b = 0;
  EXPECT_EQ(::read(taken.load(), &b, 1), 1) << "the acceptor did not close it";
  acceptor.Stop();
  EXPECT_EQ(::write(c, "y", 1), 1);
  EXPECT_EQ(::read(taken.load(), &b, 1), 1) << "nor did Stop end it";
  EXPECT_EQ(b, 'y');
  bool ran = false;
  EXPECT_FALSE(acceptor.HandOver(taken.load(), [&](int) { ran = true; }));
  EXPECT_FALSE(ran);
  ::close(taken.load());
  ::close(c);
}

TEST(TcpAcceptorTest, ListenErrorsSayWhy) {
  int port = 0;
  std::string error;
  EXPECT_LT(ListenTcp("no-port", &port, &error), 0);
  EXPECT_NE(error.find("want host:port"), std::string::npos) << error;
  EXPECT_LT(ListenTcp("[::1]:0", &port, &error, {.ipv4_only = true}), 0);
  EXPECT_NE(error.find("cannot resolve [::1]:0"), std::string::npos) << error;
  const int fd = ListenTcp("127.0.0.1:0", &port, &error);
  ASSERT_GE(fd, 0) << error;
  EXPECT_LT(ListenTcp("127.0.0.1:" + std::to_string(port), &port, &error), 0);
  EXPECT_NE(error.find("cannot listen on"), std::string::npos) << error;
  ::close(fd);
}

}  // namespace
}  // namespace rolis::server
