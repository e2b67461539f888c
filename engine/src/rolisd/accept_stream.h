// The accept stream: the leader's Accepts to one follower and the follower's
// AcceptReplies, as length-prefixed protobuf frames on a TCP connection of
// their own, beside the gRPC port that carries everything else (Promise,
// Control, Snapshot, Hello).
//
// Why not gRPC's Replicate call: every accept message woke about a dozen
// threads across the two members in gRPC 1.51 (its pollers hand the bytes to
// a server thread, the reply to another; docs/benchmarks.md, "Accept stream
// instead of gRPC's Replicate call"), and on the one vCPU that two followers
// share that per-message cost was a third of their CPU per transaction.
// Here a message wakes the follower's connection thread, and its reply the
// leader's reader thread.
//
// A connection starts with the dialer's preface: the 8 bytes of kPreface,
// then frames both ways. A frame is a 4-byte little-endian length, then
// that many bytes (an AcceptRequest to the follower, an AcceptResponse
// back). A frame longer than the limit, a bad preface or bytes that do not
// parse close that connection and nothing else (the leader redials and
// resends, as after any lost connection).
//
// With TLS (--tls-cert) the connection is mutual TLS with the same files as
// the gRPC port (tls_stream.h); without it, plaintext like that port.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace rolis::replication {

inline constexpr char kPreface[8] = {'R', 'O', 'L', 'I', 'S', 'A', 'S', '1'};

// A connected byte stream (plaintext TCP or TLS over it).
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Whole writes of any number of parts: false when the connection is gone.
  virtual bool WriteAll(const iovec* parts, int n) = 0;
  // Up to `len` bytes; 0 when the connection is gone.
  virtual size_t ReadSome(char* buf, size_t len) = 0;
  // Unblocks a reader or writer in another thread; the stream is then dead.
  virtual void Shutdown() = 0;
};

// Frames over a ByteStream. Reads are buffered: one read(2) usually brings
// a whole frame (or several).
class FrameConn {
 public:
  FrameConn(std::unique_ptr<ByteStream> s, size_t max_frame) : s_(std::move(s)), max_frame_(max_frame) {}
  // The frame's bytes are `parts` one after the other.
  bool WriteFrame(const std::string_view* parts, int n);
  bool WriteFrame(std::string_view bytes) { return WriteFrame(&bytes, 1); }
  bool WritePreface();
  // False when the connection is gone or sent a frame over the limit.
  bool ReadFrame(std::string* out);
  // The same, without a copy: *out points into this connection's buffer
  // and is valid until its next read.
  bool ReadFrameView(std::string_view* out);
  // A whole frame is in the buffer already (ReadFrameView will not block).
  bool HasBufferedFrame() const;
  // Several frames in one write.
  bool WriteFrames(const std::vector<std::string>& frames);
  bool ReadPreface();
  void Shutdown() { s_->Shutdown(); }

 private:
  bool Fill(size_t need);  // until at least `need` bytes are buffered
  std::unique_ptr<ByteStream> s_;
  size_t max_frame_;
  std::string buf_;
  size_t start_ = 0, end_ = 0;
};

// No Nagle delay, keepalive and a user timeout (a vanished peer is noticed).
void TuneSocket(int fd);
// Plaintext TCP over a connected socket (tuned). DialTcp gives -1 with the
// reason in *error.
std::unique_ptr<ByteStream> WrapSocket(int fd);
int DialTcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout, std::string* error);

// How a TLS member wraps a socket it accepted or dialed (null: plaintext).
// `peer_host` is the name the dialer verifies the certificate against.
// Each takes the socket: it is closed when the stream goes or on failure.
struct StreamSecurity {
  std::function<std::unique_ptr<ByteStream>(int fd, std::string* error)> server;
  std::function<std::unique_ptr<ByteStream>(int fd, const std::string& peer_host, std::string* error)> client;
};

// The follower's side: accepts connections and serves each on a thread of
// its own; `serve` answers one request frame.
//
// The frames a connection has buffered together (a leader pipelines its
// accepts) are served as a group: each is handed to the connection's
// FrameGroup, then Finish gives the replies of the whole group, which go
// out in one write. With durability that is where a group waits once for
// its fdatasync (group commit over pipelined batches: docs/replication.md,
// "Durability").
class AcceptStreamListener {
 public:
  enum class Served { kReply, kNoReply, kClose };
  // `request` is valid only during the call (it is the connection's buffer).
  using Serve = std::function<Served(std::string_view request, std::string* reply)>;
  class FrameGroup {
   public:
    virtual ~FrameGroup() = default;
    // kReply: a reply is queued for Finish; kClose: the connection closes.
    virtual Served Add(std::string_view request) = 0;
    // Appends the queued replies, in order, and empties the queue.
    virtual void Finish(std::vector<std::string>* replies) = 0;
  };
  using MakeGroup = std::function<std::unique_ptr<FrameGroup>()>;
  static constexpr size_t kMaxGroup = 256;  // frames served before their replies go out
  // At most `max_connections` are served at once (a leader needs one per
  // worker stream); beyond it a new connection is closed at once, so that
  // callers that open connections and never close them cannot use up the
  // member's threads.
  // A plaintext caller must send the preface within `preface_timeout` (a
  // TLS caller must finish its handshake within 5 s): a connection that
  // says nothing does not hold one of those places.
  AcceptStreamListener(StreamSecurity security, size_t max_frame, Serve serve, size_t max_connections = 1024,
                       std::chrono::milliseconds preface_timeout = std::chrono::seconds(5))
      : security_(std::move(security)), max_frame_(max_frame), make_group_(OneByOne(std::move(serve))),
        max_connections_(max_connections), preface_timeout_(preface_timeout) {}
  AcceptStreamListener(StreamSecurity security, size_t max_frame, MakeGroup make_group, size_t max_connections = 1024,
                       std::chrono::milliseconds preface_timeout = std::chrono::seconds(5))
      : security_(std::move(security)), max_frame_(max_frame), make_group_(std::move(make_group)),
        max_connections_(max_connections), preface_timeout_(preface_timeout) {}
  ~AcceptStreamListener() { Stop(); }
  // Listens on every interface at `port` (0: any free port). False with the
  // reason in *error.
  bool Start(uint16_t port, std::string* error);
  uint16_t port() const { return port_; }
  void Stop();
  size_t connections() const { return open_.load(); }

 private:
  // A served connection; the acceptor joins those done before it adds one.
  struct Conn {
    std::thread thread;
    std::shared_ptr<FrameConn> frames;  // null until set up, and once done
    bool done = false;
  };
  void AcceptLoop();
  void ServeConnection(Conn* c, int fd);
  void ReapDone();
  static MakeGroup OneByOne(Serve serve);  // a group over a per-frame Serve
  StreamSecurity security_;
  size_t max_frame_;
  MakeGroup make_group_;
  size_t max_connections_;
  std::chrono::milliseconds preface_timeout_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> open_{0};
  std::thread acceptor_;
  std::mutex mu_;  // conns_ and each Conn's frames and done
  std::list<Conn> conns_;
};

}  // namespace rolis::replication
