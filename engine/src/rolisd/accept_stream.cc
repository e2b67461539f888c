#include "accept_stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <spdlog/spdlog.h>

#include "rolis/thread_name.h"

namespace rolis::replication {
namespace {

class PlainSocket final : public ByteStream {
 public:
  explicit PlainSocket(int fd) : fd_(fd) {}
  ~PlainSocket() override { ::close(fd_); }
  // Any number of parts: a frame is a few (FrameConn::WriteFrame), a group
  // of replies two per frame (FrameConn::WriteFrames); sendmsg takes at most
  // IOV_MAX at a time.
  bool WriteAll(const iovec* parts, int n) override {
    if (n < 0) return false;
    iovec small[8];
    std::vector<iovec> large;
    iovec* v = small;
    if (n > 8) {
      large.assign(parts, parts + n);
      v = large.data();
    } else {
      std::memcpy(small, parts, sizeof(iovec) * static_cast<size_t>(n));
    }
    int at = 0;
    while (at < n) {
      while (at < n && v[at].iov_len == 0) at++;  // sendmsg of empty parts only would send 0 bytes
      if (at == n) break;
      // MSG_NOSIGNAL: a peer that went away is an EPIPE here, not a SIGPIPE
      // that kills a process which did not ignore it (rolis-bench, tests).
      msghdr msg{};
      msg.msg_iov = v + at;
      msg.msg_iovlen = std::min<size_t>(static_cast<size_t>(n - at), IOV_MAX);
      ssize_t w = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      size_t left = static_cast<size_t>(w);
      while (at < n && left >= v[at].iov_len) left -= v[at++].iov_len;
      if (at < n) {
        v[at].iov_base = static_cast<char*>(v[at].iov_base) + left;
        v[at].iov_len -= left;
      }
    }
    return true;
  }
  size_t ReadSome(char* buf, size_t len) override {
    for (;;) {
      ssize_t r = ::read(fd_, buf, len);
      if (r < 0 && errno == EINTR) continue;
      return r > 0 ? static_cast<size_t>(r) : 0;
    }
  }
  void Shutdown() override { ::shutdown(fd_, SHUT_RDWR); }

 private:
  int fd_;
};

void PutLength(char out[4], uint32_t n) {
  for (int i = 0; i < 4; i++) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
}
uint32_t GetLength(const char* in) {
  uint32_t n = 0;
  for (int i = 0; i < 4; i++) n |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return n;
}

}  // namespace

void TuneSocket(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // A peer that vanished (its pod replaced, its host gone) is found in
  // about 4 s, as gRPC's keepalive found it on the other port; data not
  // acknowledged for 5 s also ends the connection. Either side then
  // redials or waits for a new connection.
  int idle = 2, interval = 1, count = 2, user_timeout_ms = 5000;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof(user_timeout_ms));
}

std::unique_ptr<ByteStream> WrapSocket(int fd) {
  TuneSocket(fd);
  return std::make_unique<PlainSocket>(fd);
}

bool FrameConn::WriteFrame(const std::string_view* parts, int n) {
  if (n > 6) return false;
  size_t total = 0;
  for (int i = 0; i < n; i++) total += parts[i].size();
  if (total > max_frame_) return false;
  char head[4];
  PutLength(head, static_cast<uint32_t>(total));
  iovec v[7];
  v[0] = {head, 4};
  for (int i = 0; i < n; i++) v[i + 1] = {const_cast<char*>(parts[i].data()), parts[i].size()};
  return s_->WriteAll(v, n + 1);
}

bool FrameConn::WritePreface() {
  iovec v{const_cast<char*>(kPreface), sizeof(kPreface)};
  return s_->WriteAll(&v, 1);
}

bool FrameConn::Fill(size_t need) {
  if (end_ - start_ >= need) return true;
  if (start_ > 0) {  // keep the unread bytes at the front
    std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
    end_ -= start_;
    start_ = 0;
  }
  if (buf_.size() < need) buf_.resize(std::max(need, size_t{64} << 10));
  while (end_ < need) {
    size_t got = s_->ReadSome(buf_.data() + end_, buf_.size() - end_);
    if (got == 0) return false;
    end_ += got;
  }
  return true;
}

bool FrameConn::ReadFrameView(std::string_view* out) {
  if (start_ == end_) start_ = end_ = 0;  // the last frame is consumed
  if (!Fill(4)) return false;
  const uint32_t n = GetLength(buf_.data() + start_);
  if (n > max_frame_) return false;
  if (!Fill(4 + size_t{n})) return false;
  *out = std::string_view(buf_.data() + start_ + 4, n);
  start_ += 4 + size_t{n};
  return true;
}

bool FrameConn::HasBufferedFrame() const {
  if (end_ - start_ < 4) return false;
  const uint32_t n = GetLength(buf_.data() + start_);
  return n <= max_frame_ && end_ - start_ >= 4 + size_t{n};
}

bool FrameConn::WriteFrames(const std::vector<std::string>& frames) {
  if (frames.size() == 1) return WriteFrame(frames[0]);
  if (frames.size() > size_t{INT_MAX} / 2) return false;
  std::vector<char> heads(4 * frames.size());
  std::vector<iovec> v;
  v.reserve(2 * frames.size());
  for (size_t i = 0; i < frames.size(); i++) {
    if (frames[i].size() > max_frame_) return false;
    PutLength(heads.data() + 4 * i, static_cast<uint32_t>(frames[i].size()));
    v.push_back({heads.data() + 4 * i, 4});
    v.push_back({const_cast<char*>(frames[i].data()), frames[i].size()});
  }
  return s_->WriteAll(v.data(), static_cast<int>(v.size()));
}

bool FrameConn::ReadFrame(std::string* out) {
  std::string_view v;
  if (!ReadFrameView(&v)) return false;
  out->assign(v);
  return true;
}

bool FrameConn::ReadPreface() {
  if (!Fill(sizeof(kPreface))) return false;
  const bool ok = std::memcmp(buf_.data() + start_, kPreface, sizeof(kPreface)) == 0;
  start_ += sizeof(kPreface);
  return ok;
}

int DialTcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    *error = "cannot resolve " + host + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof(err);
      if (::poll(&p, 1, static_cast<int>(timeout.count())) == 1 &&
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        rc = 0;
      } else {
        errno = err != 0 ? err : ETIMEDOUT;
      }
    }
    if (rc != 0) {
      *error = "cannot connect to " + host + ":" + service + ": " + std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd >= 0) {
    // Blocking from here on; the connection thread blocks in read and write.
    int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  return fd;
}

bool AcceptStreamListener::Start(uint16_t port, std::string* error) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = fd >= 0;
  if (!v6) fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  int one = 1, zero = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));  // IPv4 too
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(port);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(port);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  if (rc != 0 || ::listen(fd, 64) != 0) {
    *error = "cannot listen on port " + std::to_string(port) + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                   : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listen_fd_ = fd;
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return true;
}

AcceptStreamListener::MakeGroup AcceptStreamListener::OneByOne(Serve serve) {
  class Group final : public FrameGroup {
   public:
    explicit Group(const Serve* serve) : serve_(serve) {}
    Served Add(std::string_view request) override {
      std::string reply;
      const Served s = (*serve_)(request, &reply);
      if (s == Served::kReply) queued_.push_back(std::move(reply));
      return s;
    }
    void Finish(std::vector<std::string>* replies) override {
      for (std::string& r : queued_) replies->push_back(std::move(r));
      queued_.clear();
    }

   private:
    const Serve* serve_;
    std::vector<std::string> queued_;
  };
  auto shared = std::make_shared<Serve>(std::move(serve));
  return [shared] { return std::unique_ptr<FrameGroup>(std::make_unique<Group>(shared.get())); };
}

void AcceptStreamListener::Stop() {
  if (stop_.exchange(true)) return;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  std::list<Conn> conns;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (Conn& c : conns_) {
      if (c.frames) c.frames->Shutdown();
    }
    conns.swap(conns_);
  }
  for (Conn& c : conns) c.thread.join();
}

void AcceptStreamListener::ReapDone() {
  std::list<Conn> done;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto it = conns_.begin(); it != conns_.end();) {
      auto next = std::next(it);
      if (it->done) done.splice(done.end(), conns_, it);
      it = next;
    }
  }
  for (Conn& c : done) c.thread.join();
}

void AcceptStreamListener::AcceptLoop() {
  NameThisThread("rolis-as-listen");
  while (!stop_.load()) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (stop_.load()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // EMFILE and the like
      continue;
    }
    ReapDone();
    std::lock_guard<std::mutex> g(mu_);
    if (stop_.load()) {
      ::close(fd);
      return;
    }
    if (open_.load() >= max_connections_) {
      ::close(fd);
      static std::atomic<int> logged{0};
      if (logged.fetch_add(1) < 10) {
        spdlog::warn("replication: accept stream connection closed: {} are open already", max_connections_);
      }
      continue;
    }
    Conn& c = conns_.emplace_back();
    open_++;
    c.thread = std::thread([this, &c, fd] { ServeConnection(&c, fd); });
  }
}

void AcceptStreamListener::ServeConnection(Conn* c, int fd) {
  NameThisThread("rolis-as-serve");
  std::string error;
  std::unique_ptr<ByteStream> stream = security_.server ? security_.server(fd, &error) : WrapSocket(fd);
  if (!stream) {
    static std::atomic<int> logged{0};
    if (logged.fetch_add(1) < 10) spdlog::warn("replication: accept stream connection refused: {}", error);
  }
  // Reads of a plaintext socket time out until the preface is in (TLS's
  // handshake has a deadline of its own).
  auto read_timeout = [&](std::chrono::milliseconds t) {
    timeval tv{static_cast<time_t>(t.count() / 1000), static_cast<suseconds_t>((t.count() % 1000) * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  };
  const bool plaintext = stream && !security_.server;
  if (plaintext) read_timeout(preface_timeout_);
  std::shared_ptr<FrameConn> conn;
  if (stream) {
    conn = std::make_shared<FrameConn>(std::move(stream), max_frame_);
    std::lock_guard<std::mutex> g(mu_);
    c->frames = conn;
    if (stop_.load()) conn->Shutdown();
  }
  if (conn && conn->ReadPreface()) {
    if (plaintext) read_timeout(std::chrono::milliseconds(0));  // a leader may be quiet for long
    std::string_view request;
    std::unique_ptr<FrameGroup> group = make_group_();
    std::vector<std::string> replies;
    while (!stop_.load() && conn->ReadFrameView(&request)) {
      // This frame and every whole frame already buffered after it.
      bool close = group->Add(request) == Served::kClose;
      for (size_t n = 1; !close && n < kMaxGroup && conn->HasBufferedFrame() && conn->ReadFrameView(&request); n++) {
        close = group->Add(request) == Served::kClose;
      }
      // The replies of the frames before a kClose still go out, as when
      // each frame was answered on its own.
      replies.clear();
      group->Finish(&replies);
      if ((!replies.empty() && !conn->WriteFrames(replies)) || close) break;
    }
  }
  std::lock_guard<std::mutex> g(mu_);
  c->frames = nullptr;
  conn = nullptr;  // closes the connection
  c->done = true;
  open_--;
}

}  // namespace rolis::replication
