// A listening TCP port that serves each connection on a thread of its own
// and tracks the open sockets, so that Stop ends every connection at once
// and returns when their threads are done. The metrics HTTPS port
// (https_listener.h) and the front of --tls-accept-plaintext
// (tls_or_plaintext_port.h) are built on it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace rolis::server {

struct ListenOptions {
  bool ipv4_only = false;
  int backlog = 256;
};

// A listening TCP socket at host:port ("0.0.0.0:7000", "[::]:0",
// "localhost:0"); -1 with the reason in *error. *port gets the bound port.
int ListenTcp(const std::string& address, int* port, std::string* error, ListenOptions options = {});

class TcpAcceptor {
 public:
  // Serves one connection on its own thread. When it returns, the acceptor
  // closes the socket unless it was handed over (HandOver).
  using Serve = std::function<void(int fd)>;

  // Beyond `max_connections` being served, a new connection is closed at once.
  TcpAcceptor(int max_connections, ListenOptions listen, Serve serve)
      : max_connections_(max_connections), listen_(listen), serve_(std::move(serve)) {}
  ~TcpAcceptor() { Stop(); }

  // Listens at `address` and starts accepting; false with the reason in *error.
  bool Start(const std::string& address, std::string* error);
  int port() const { return port_; }
  // Closes the port, shuts every tracked socket down (their reads and
  // writes end at once) and returns when every Serve has returned.
  void Stop();

  // For Serve: unless Stop has begun, runs take(fd) under the acceptor's
  // lock (Stop waits for it) and the socket is take's from then on. False
  // when stopping (take not run).
  bool HandOver(int fd, const std::function<void(int)>& take);
  // Another socket for Stop to shut down (a relayed twin); shut down at once
  // when Stop has begun. CloseTracked forgets and closes it.
  void Track(int fd);
  void CloseTracked(int fd);

 private:
  void AcceptLoop();
  void Run(int fd);

  const int max_connections_;
  const ListenOptions listen_;
  Serve serve_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable idle_;
  std::set<int> open_;  // sockets being served, and tracked ones
  int serving_ = 0;     // threads of Serve
};

}  // namespace rolis::server
