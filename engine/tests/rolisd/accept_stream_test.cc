// The accept stream (accept_stream.h, tls_stream.h) on real loopback sockets:
// frames both ways, and bad input closing only its own connection: a wrong
// preface, a frame over the limit, a serve that refuses; with mutual TLS,
// callers without the cluster CA's certificate and a certificate of another
// host are refused before anything is served.
#include "accept_stream.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tls_stream.h"

namespace rolis::replication {
namespace {

constexpr size_t kMaxFrame = 4 << 20;

// A listener whose serve answers "re:" + the request; "close" asks it to
// close the connection and "quiet" gets no reply.
struct EchoServer {
  explicit EchoServer(StreamSecurity security = {})
      : listener(std::move(security), kMaxFrame, [this](std::string_view req, std::string* reply) {
          served++;
          if (req == "close") return AcceptStreamListener::Served::kClose;
          if (req == "quiet") return AcceptStreamListener::Served::kNoReply;
          *reply = "re:" + std::string(req);
          return AcceptStreamListener::Served::kReply;
        }) {
    std::string error;
    started = listener.Start(0, &error);
    EXPECT_TRUE(started) << error;
  }
  std::atomic<int> served{0};
  AcceptStreamListener listener;
  bool started = false;
};

// A serve that answers each request with itself and counts it.
AcceptStreamListener::Serve Mirror(std::atomic<int>* served) {
  return [served](std::string_view req, std::string* reply) {
    (*served)++;
    reply->assign(req);
    return AcceptStreamListener::Served::kReply;
  };
}

std::unique_ptr<FrameConn> Dial(uint16_t port, const StreamSecurity& security = {},
                                const std::string& host = "127.0.0.1") {
  std::string error;
  int fd = DialTcp("127.0.0.1", port, std::chrono::milliseconds(2000), &error);
  EXPECT_GE(fd, 0) << error;
  if (fd < 0) return nullptr;
  std::unique_ptr<ByteStream> s = security.client ? security.client(fd, host, &error) : WrapSocket(fd);
  if (!s) return nullptr;
  return std::make_unique<FrameConn>(std::move(s), kMaxFrame);
}

// Writes raw bytes on a plaintext connection.
int RawDial(uint16_t port) {
  std::string error;
  return DialTcp("127.0.0.1", port, std::chrono::milliseconds(2000), &error);
}

// What a dialer writes first: the preface and a frame's length.
std::string PrefaceAndLength(uint32_t n) {
  std::string out(kPreface, sizeof(kPreface));
  for (int i = 0; i < 4; i++) out.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));  // little-endian
  return out;
}

// True when the server closed the connection within 5 s, having sent no
// reply frame (a TLS alert may come first).
bool ClosedByServer(int fd) {
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string got;
  char buf[512];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return got.find("re:") == std::string::npos;
    if (n < 0) return false;  // timed out: still open
    got.append(buf, static_cast<size_t>(n));
  }
}

TEST(AcceptStream, FramesGoBothWaysInOrderWithTheirPartsJoined) {
  EchoServer s;
  auto c = Dial(s.listener.port());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->WritePreface());
  const std::string big(3 << 20, 'x');
  const std::string_view two[2] = {"head|", "payload"};
  ASSERT_TRUE(c->WriteFrame("one"));
  ASSERT_TRUE(c->WriteFrame(two, 2));
  ASSERT_TRUE(c->WriteFrame(big));
  ASSERT_TRUE(c->WriteFrame(""));
  std::string got;
  ASSERT_TRUE(c->ReadFrame(&got));
  EXPECT_EQ(got, "re:one");
  ASSERT_TRUE(c->ReadFrame(&got));
  EXPECT_EQ(got, "re:head|payload");
  ASSERT_TRUE(c->ReadFrame(&got));
  EXPECT_EQ(got, "re:" + big);
  ASSERT_TRUE(c->ReadFrame(&got));
  EXPECT_EQ(got, "re:");
  EXPECT_EQ(s.served.load(), 4);
}

TEST(AcceptStream, AWrongPrefaceClosesThatConnectionOnly) {
  EchoServer s;
  int fd = RawDial(s.listener.port());
  ASSERT_GE(fd, 0);
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::write(fd, http.data(), http.size()), static_cast<ssize_t>(http.size()));
  EXPECT_TRUE(ClosedByServer(fd));
  ::close(fd);
  EXPECT_EQ(s.served.load(), 0);
  auto c = Dial(s.listener.port());  // the listener still serves members
  ASSERT_TRUE(c && c->WritePreface() && c->WriteFrame("ok"));
  std::string got;
  ASSERT_TRUE(c->ReadFrame(&got));
  EXPECT_EQ(got, "re:ok");
}

TEST(AcceptStream, AFrameOverTheLimitClosesTheConnectionUnserved) {
  EchoServer s;
  int fd = RawDial(s.listener.port());
  ASSERT_GE(fd, 0);
  const std::string bytes = PrefaceAndLength(kMaxFrame + 1);
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), 12);
  EXPECT_TRUE(ClosedByServer(fd));
  ::close(fd);
  EXPECT_EQ(s.served.load(), 0);
  // The writer refuses to send one, too.
  auto c = Dial(s.listener.port());
  ASSERT_TRUE(c && c->WritePreface());
  EXPECT_FALSE(c->WriteFrame(std::string(kMaxFrame + 1, 'y')));
}

TEST(AcceptStream, ATruncatedFrameIsNotServed) {
  EchoServer s;
  int fd = RawDial(s.listener.port());
  ASSERT_GE(fd, 0);
  const std::string bytes = PrefaceAndLength(10) + "ab";  // says 10 bytes, 2 follow
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), 14);
  ::shutdown(fd, SHUT_WR);
  EXPECT_TRUE(ClosedByServer(fd));
  ::close(fd);
  EXPECT_EQ(s.served.load(), 0);
}

TEST(AcceptStream, ServeMayDropARequestOrCloseTheConnection) {
  EchoServer s;
  auto c = Dial(s.listener.port());
  ASSERT_TRUE(c && c->WritePreface());
  ASSERT_TRUE(c->WriteFrame("quiet"));
  ASSERT_TRUE(c->WriteFrame("after"));
  std::string got;
  ASSERT_TRUE(c->ReadFrame(&got));
  EXPECT_EQ(got, "re:after");  // nothing for "quiet"
  ASSERT_TRUE(c->WriteFrame("close"));
  EXPECT_FALSE(c->ReadFrame(&got));
}

// Frames a dialer pipelined arrive together and are served as one group
// (AcceptStreamListener::FrameGroup): every one is answered, in order, also
// when the group's replies are more parts than one sendmsg call takes.
TEST(AcceptStream, PipelinedFramesAreAllAnsweredInOrder) {
  EchoServer s;
  const int n = static_cast<int>(AcceptStreamListener::kMaxGroup) + 44;
  std::string bytes(kPreface, sizeof(kPreface));
  for (int i = 0; i < n; i++) {
    const std::string f = std::to_string(i);
    for (int b = 0; b < 4; b++) bytes.push_back(static_cast<char>((f.size() >> (8 * b)) & 0xFF));
    bytes += f;
  }
  std::string error;
  int fd = DialTcp("127.0.0.1", s.listener.port(), std::chrono::milliseconds(2000), &error);
  ASSERT_GE(fd, 0) << error;
  std::unique_ptr<ByteStream> stream = WrapSocket(fd);
  iovec all{bytes.data(), bytes.size()};
  ASSERT_TRUE(stream->WriteAll(&all, 1));  // one write: the server reads them together
  FrameConn c(std::move(stream), kMaxFrame);
  std::string got;
  for (int i = 0; i < n; i++) {
    ASSERT_TRUE(c.ReadFrame(&got)) << "reply " << i << " of " << n;
    EXPECT_EQ(got, "re:" + std::to_string(i));
  }
  EXPECT_EQ(s.served.load(), n);
}

// The replies of the frames before a "close" in the same group still go out.
TEST(AcceptStream, RepliesQueuedBeforeACloseInTheSameGroupGoOut) {
  EchoServer s;
  auto c = Dial(s.listener.port());
  ASSERT_TRUE(c && c->WritePreface());
  ASSERT_TRUE(c->WriteFrames({"a", "b", "close", "never"}));
  std::string got;
  ASSERT_TRUE(c->ReadFrame(&got));
  EXPECT_EQ(got, "re:a");
  ASSERT_TRUE(c->ReadFrame(&got));
  EXPECT_EQ(got, "re:b");
  EXPECT_FALSE(c->ReadFrame(&got));
}

// WriteFrames puts any number of frames on a plaintext connection (two
// parts each: more than one sendmsg call takes).
TEST(AcceptStream, WriteFramesSendsManyFramesInOrder) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  FrameConn a(WrapSocket(fds[0]), kMaxFrame), b(WrapSocket(fds[1]), kMaxFrame);
  std::vector<std::string> frames;
  for (int i = 0; i < 1500; i++) frames.push_back(i % 7 == 0 ? std::string() : std::to_string(i));
  ASSERT_TRUE(a.WriteFrames(frames));
  std::string got;
  for (size_t i = 0; i < frames.size(); i++) {
    ASSERT_TRUE(b.ReadFrame(&got)) << "frame " << i;
    EXPECT_EQ(got, frames[i]);
  }
}

TEST(AcceptStream, StopEndsConnectionsThatAreStillOpen) {
  auto s = std::make_unique<EchoServer>();
  auto c = Dial(s->listener.port());
  ASSERT_TRUE(c && c->WritePreface() && c->WriteFrame("x"));
  std::string got;
  ASSERT_TRUE(c->ReadFrame(&got));
  s->listener.Stop();  // joins the connection's thread, blocked in its read
  EXPECT_FALSE(c->ReadFrame(&got));
}

TEST(AcceptStream, ConnectionsBeyondTheLimitAreClosedAndTheOthersServed) {
  std::atomic<int> served{0};
  AcceptStreamListener l({}, kMaxFrame, Mirror(&served), /*max_connections=*/2);
  std::string error;
  ASSERT_TRUE(l.Start(0, &error)) << error;
  auto a = Dial(l.port()), b = Dial(l.port());
  ASSERT_TRUE(a && b && a->WritePreface() && b->WritePreface() && a->WriteFrame("a") && b->WriteFrame("b"));
  std::string got;
  ASSERT_TRUE(a->ReadFrame(&got) && b->ReadFrame(&got));  // both served: the listener counts them
  int third = RawDial(l.port());
  ASSERT_GE(third, 0);
  EXPECT_TRUE(ClosedByServer(third));
  ::close(third);
  ASSERT_TRUE(a->WriteFrame("still"));
  ASSERT_TRUE(a->ReadFrame(&got));
  EXPECT_EQ(got, "still");
  EXPECT_EQ(served.load(), 3);
}

TEST(AcceptStream, ACallerThatSendsNoPrefaceIsClosedAndItsPlaceFreed) {
  std::atomic<int> served{0};
  AcceptStreamListener l({}, kMaxFrame, Mirror(&served), /*max_connections=*/1,
                         /*preface_timeout=*/std::chrono::milliseconds(300));
  std::string error;
  ASSERT_TRUE(l.Start(0, &error)) << error;
  int silent = RawDial(l.port());
  ASSERT_GE(silent, 0);
  EXPECT_TRUE(ClosedByServer(silent));  // after 300 ms, not at once (one place is free)
  ::close(silent);
  // The place is free again: a member is served, and may then be quiet for
  // longer than the preface timeout.
  std::unique_ptr<FrameConn> c;
  for (int i = 0; i < 100 && l.connections() != 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  c = Dial(l.port());
  ASSERT_TRUE(c && c->WritePreface());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  std::string got;
  ASSERT_TRUE(c->WriteFrame("late") && c->ReadFrame(&got));
  EXPECT_EQ(got, "late");
  EXPECT_EQ(served.load(), 1);
}

// --- mutual TLS -------------------------------------------------------------

bool Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

// <dir>/<ca>.pem/.key, and <dir>/<name>.pem/.key signed by it for both
// usages (a member is server and client), naming 127.0.0.1 and localhost.
bool MakeCa(const std::string& dir, const std::string& ca) {
  return Sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" + ca + " -keyout " + dir + "/" + ca +
            ".key -out " + dir + "/" + ca + ".pem");
}
bool MakeMember(const std::string& dir, const std::string& ca, const std::string& name) {
  const std::string ext = dir + "/" + name + ".ext";
  FILE* f = std::fopen(ext.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n");
  std::fclose(f);
  return Sh("openssl req -newkey rsa:2048 -nodes -subj /CN=" + name + " -keyout " + dir + "/" + name + ".key -out " +
            dir + "/" + name + ".csr") &&
         Sh("openssl x509 -req -days 2 -in " + dir + "/" + name + ".csr -CA " + dir + "/" + ca + ".pem -CAkey " +
            dir + "/" + ca + ".key -CAcreateserial -extfile " + ext + " -out " + dir + "/" + name + ".pem");
}

class AcceptStreamTls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/accept-stream-tls-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_TRUE(MakeCa(dir_, "ca") && MakeMember(dir_, "ca", "member"));
    ASSERT_TRUE(MakeCa(dir_, "other") && MakeMember(dir_, "other", "stranger"));
  }
  static void TearDownTestSuite() { Sh("rm -rf " + dir_); }
  static StreamSecurity Security(const std::string& ca, const std::string& name) {
    StreamSecurity out;
    std::string error;
    TlsFiles f{dir_ + "/" + name + ".pem", dir_ + "/" + name + ".key", dir_ + "/" + ca + ".pem"};
    EXPECT_TRUE(MakeTlsStreamSecurity(f, &out, &error)) << error;
    return out;
  }
  // Two members' streams over a socketpair, after their handshake.
  static void HandshakeOverASocketPair(std::unique_ptr<ByteStream>* server, std::unique_ptr<ByteStream>* client) {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    const StreamSecurity member = Security("ca", "member");
    std::string server_error, client_error;
    std::thread accept([&] { *server = member.server(fds[0], &server_error); });
    *client = member.client(fds[1], "127.0.0.1", &client_error);
    accept.join();
    ASSERT_TRUE(*server) << server_error;
    ASSERT_TRUE(*client) << client_error;
  }
  static std::string dir_;
};
std::string AcceptStreamTls::dir_;

TEST_F(AcceptStreamTls, MembersOfTheClusterCAExchangeFrames) {
  EchoServer s(Security("ca", "member"));
  const StreamSecurity member = Security("ca", "member");
  for (const char* host : {"127.0.0.1", "localhost"}) {
    auto c = Dial(s.listener.port(), member, host);
    ASSERT_TRUE(c) << host;
    ASSERT_TRUE(c->WritePreface());
    const std::string big(1 << 20, 'z');  // many TLS records
    ASSERT_TRUE(c->WriteFrame(big));
    std::string got;
    ASSERT_TRUE(c->ReadFrame(&got));
    EXPECT_EQ(got, "re:" + big);
  }
}

// A group of frames written at once reaches the reader in one read, as on a
// plain socket: the accept stream answers the frames it finds buffered as
// one group (one sync wait, one write). One TLS record per part, read one
// record per call, made every frame its own group.
TEST_F(AcceptStreamTls, AGroupOfFramesArrivesInOneRead) {
  std::unique_ptr<ByteStream> server, client;
  ASSERT_NO_FATAL_FAILURE(HandshakeOverASocketPair(&server, &client));
  FrameConn writer(std::move(client), kMaxFrame), reader(std::move(server), kMaxFrame);
  std::vector<std::string> frames;
  for (int i = 0; i < 20; i++) frames.push_back("frame " + std::to_string(i));
  ASSERT_TRUE(writer.WriteFrames(frames));  // all on the socket before the first read
  std::string_view got;
  ASSERT_TRUE(reader.ReadFrameView(&got));
  EXPECT_EQ(got, "frame 0");
  int buffered = 0;
  while (reader.HasBufferedFrame() && reader.ReadFrameView(&got)) buffered++;
  EXPECT_EQ(buffered, 19) << "frames read with the first one";
}

TEST_F(AcceptStreamTls, CallersWithoutTheClustersCertificateAreNotServed) {
  EchoServer s(Security("ca", "member"));
  // Plaintext: the server's handshake fails on the preface.
  int fd = RawDial(s.listener.port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, kPreface, 8), 8);
  EXPECT_TRUE(ClosedByServer(fd));
  ::close(fd);
  // A certificate of another CA (that trusts ours): refused by the server.
  StreamSecurity stranger;
  std::string error;
  ASSERT_TRUE(MakeTlsStreamSecurity({dir_ + "/stranger.pem", dir_ + "/stranger.key", dir_ + "/ca.pem"}, &stranger,
                                    &error))
      << error;
  auto c = Dial(s.listener.port(), stranger);
  if (c) {  // TLS 1.3: the client may finish first and learn of the refusal on its first read
    (void)c->WritePreface();
    (void)c->WriteFrame("secret");
    std::string got;
    EXPECT_FALSE(c->ReadFrame(&got));
  }
  EXPECT_EQ(s.served.load(), 0);
}

// As for the plain stream below: over TLS too, a peer that went away makes
// a write fail instead of raising SIGPIPE (this test binary does not ignore it).
TEST_F(AcceptStreamTls, AWriteToAPeerThatClosedFailsWithoutSigpipe) {
  std::unique_ptr<ByteStream> server, client;
  ASSERT_NO_FATAL_FAILURE(HandshakeOverASocketPair(&server, &client));
  server.reset();  // closes its socket
  const std::string data(1 << 16, 'x');
  iovec part{const_cast<char*>(data.data()), data.size()};
  bool failed = false;
  for (int i = 0; i < 8 && !failed; i++) failed = !client->WriteAll(&part, 1);
  EXPECT_TRUE(failed);
}

TEST_F(AcceptStreamTls, ADialerRefusesAServerOfAnotherCAOrHost) {
  EchoServer foreign(Security("other", "stranger"));
  EXPECT_FALSE(Dial(foreign.listener.port(), Security("ca", "member")));
  EchoServer ours(Security("ca", "member"));
  EXPECT_FALSE(Dial(ours.listener.port(), Security("ca", "member"), "rolis-2.example"));  // not in its names
  EXPECT_EQ(foreign.served.load() + ours.served.load(), 0);
}

TEST_F(AcceptStreamTls, UnreadableFilesAreAnErrorUpFront) {
  StreamSecurity out;
  std::string error;
  EXPECT_FALSE(MakeTlsStreamSecurity({dir_ + "/missing.pem", dir_ + "/member.key", dir_ + "/ca.pem"}, &out, &error));
  EXPECT_NE(error.find("--tls-cert"), std::string::npos) << error;
  EXPECT_FALSE(MakeTlsStreamSecurity({dir_ + "/member.pem", dir_ + "/stranger.key", dir_ + "/ca.pem"}, &out, &error));
  EXPECT_NE(error.find("--tls-key"), std::string::npos) << error;
}

// A peer that went away makes a write fail; it does not raise SIGPIPE,
// which kills a process that does not ignore it (this test binary does not).
TEST(AcceptStream, AWriteToAPeerThatClosedFailsWithoutSigpipe) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  std::unique_ptr<ByteStream> s = WrapSocket(fds[0]);
  ::close(fds[1]);
  const std::string data(1 << 16, 'x');
  iovec part{const_cast<char*>(data.data()), data.size()};
  EXPECT_FALSE(s->WriteAll(&part, 1));
  EXPECT_FALSE(s->WriteAll(&part, 1));
}

}  // namespace
}  // namespace rolis::replication
