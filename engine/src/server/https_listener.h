// The metrics port over HTTPS (--metrics-tls; docs/operations.md, "Security
// model"): the member's certificate (--tls-cert/--tls-key, re-read every
// --tls-refresh-interval, so rotated certificates are served without a
// restart), no client certificate asked for (kubelet probes and Prometheus
// present none). civetweb's own TLS loads libssl by dlopen and does not work
// with the Debian build, hence this small server: one request per
// connection (GET or HEAD), answered by the same handler as the plain HTTP
// port (http.h).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "rolis/status.h"
#include "server/tcp_acceptor.h"

namespace rolis::server {

class TlsContextFiles;

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
  int port() const { return acceptor_.port(); }

 private:
  void ServeConnection(int fd);
  // One request read by `read` (bytes into buf, <= 0 at the end) and its
  // answer written by `write` (bytes written, <= 0 on failure).
  void Answer(const std::function<int(char* buf, int len)>& read, const std::function<int(const char*, int)>& write);

  std::unique_ptr<TlsContextFiles> ctx_;
  bool accept_plaintext_;
  Handler handler_;
  TcpAcceptor acceptor_;
};

}  // namespace rolis::server
