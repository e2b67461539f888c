// The metrics port over HTTPS (--metrics-tls; docs/operations.md, "Security
// model"): the member's certificate (--tls-cert/--tls-key, re-read every
// --tls-refresh-interval, so rotated certificates are served without a
// restart), no client certificate asked for (kubelet probes and Prometheus
// present none). civetweb's own TLS loads libssl by dlopen and does not work
// with the Debian build, hence this small server: one request per
// connection (GET or HEAD), answered by the same handler as the plain HTTP
// port (http.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "rolis/status.h"

namespace rolis::server {

struct HttpResponse {
  int code = 200;
  std::string reason = "OK";
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // HEAD: the headers only.
  bool head_only = false;
};

struct HttpsFiles {
  std::string cert, key;
  std::chrono::seconds refresh{60};
  // --tls-accept-plaintext: a connection that does not open with a TLS
  // handshake is served in plain HTTP (tls_or_plaintext_port.h).
  bool accept_plaintext = false;
};

class HttpsListener {
 public:
  using Handler = std::function<HttpResponse(const std::string& method, const std::string& path)>;
  // At most this many connections are served at once; beyond, a new one is
  // closed at once (a caller that opens connections and says nothing cannot
  // use up threads). Each has 10 s for its handshake and request.
  static constexpr int kMaxConnections = 32;

  HttpsListener(HttpsFiles files, Handler handler);
  ~HttpsListener();

  // Listens on host:port (IPv4; port 0: any free port). Fails when the
  // certificate files do not load or the address cannot be bound.
  Status Start(const std::string& address);
  void Stop();
  int port() const { return port_; }

 private:
  class Context;
  void AcceptLoop();
  void ServeConnection(int fd);
  // One request read by `read` (bytes into buf, <= 0 at the end) and its
  // answer written by `write` (bytes written, <= 0 on failure).
  void Answer(const std::function<int(char* buf, int len)>& read, const std::function<int(const char*, int)>& write);

  std::unique_ptr<Context> ctx_;
  bool accept_plaintext_;
  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable idle_;
  std::set<int> open_;  // sockets being served
};

}  // namespace rolis::server
