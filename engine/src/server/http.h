// The HTTP endpoint of rolisd (civetweb): /metrics in the Prometheus text
// format (prometheus-cpp's TextSerializer over Metrics and any registry
// collectables), /healthz (the process serves) and /readyz (ready for
// traffic). prometheus-cpp's Exposer cannot serve extra paths, hence civetweb.
// With TLS files the same paths are served over HTTPS instead
// (https_listener.h).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "rolis/status.h"
#include "server/https_listener.h"

struct mg_context;
struct mg_connection;

namespace rolis::server {

class Metrics;

class HttpServer {
 public:
  struct Handlers {
    const Metrics* metrics = nullptr;
    // Returns true when healthy / ready; `detail` is the body.
    std::function<bool(std::string* detail)> healthy;
    std::function<bool(std::string* detail)> ready;
  };

  explicit HttpServer(Handlers handlers);
  ~HttpServer();

  // Listens on host:port (port 0: an ephemeral port, see port()); over
  // HTTPS with `tls`'s files when it is given.
  Status Start(const std::string& address, const HttpsFiles* tls = nullptr);
  void Stop();
  int port() const { return port_; }
  bool https() const { return https_ != nullptr; }

  // The answer to a request (either transport).
  HttpResponse Answer(const std::string& method, const std::string& path) const;

 private:
  static int Serve(mg_connection* conn, void* self);

  Handlers handlers_;
  std::unique_ptr<HttpsListener> https_;
  mg_context* ctx_ = nullptr;
  int port_ = 0;
};

}  // namespace rolis::server
