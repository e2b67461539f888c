#include "server/http.h"

#include <civetweb.h>
#include <fmt/format.h>

#include <cstring>
#include <mutex>

#include "server/metrics.h"

namespace rolis::server {
namespace {

void Reply(mg_connection* conn, int code, const char* reason, const char* content_type, const std::string& body) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
            "Connection: close\r\n\r\n",
            code, reason, content_type, body.size());
  mg_write(conn, body.data(), body.size());
}

std::once_flag g_init;

thread_local std::string* g_start_error = nullptr;

int LogMessage(const mg_connection*, const char* message) {
  if (g_start_error != nullptr) *g_start_error = message;
  return 1;  // do not print
}

}  // namespace

HttpServer::HttpServer(Handlers handlers) : handlers_(std::move(handlers)) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start(const std::string& address, const HttpsFiles* tls) {
  if (tls != nullptr) {
    https_ = std::make_unique<HttpsListener>(
        *tls, [this](const std::string& method, const std::string& path) { return Answer(method, path); });
    if (Status s = https_->Start(address); !s.ok()) {
      https_.reset();
      return s;
    }
    port_ = https_->port();
    return Status::OK();
  }
  std::call_once(g_init, [] { mg_init_library(0); });
  // civetweb wants an IP address: map the common host names.
  std::string listen = address;
  if (listen.rfind("localhost:", 0) == 0) listen = "127.0.0.1" + listen.substr(9);
  const char* options[] = {"listening_ports",    listen.c_str(), "num_threads", "2", "request_timeout_ms", "10000",
                           "enable_keep_alive", "no",           nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  callbacks.log_message = &LogMessage;
  std::string error;
  g_start_error = &error;
  ctx_ = mg_start(&callbacks, this, options);
  g_start_error = nullptr;
  if (ctx_ == nullptr) {
    return Status::Internal(fmt::format("metrics HTTP server cannot listen on {}: {}", address,
                                        error.empty() ? "mg_start failed" : error));
  }
  mg_server_port ports[4];
  std::memset(ports, 0, sizeof(ports));
  int n = mg_get_server_ports(ctx_, 4, ports);
  port_ = n > 0 ? ports[0].port : 0;
  mg_set_request_handler(ctx_, "/metrics$", &HttpServer::Serve, this);
  mg_set_request_handler(ctx_, "/healthz$", &HttpServer::Serve, this);
  mg_set_request_handler(ctx_, "/readyz$", &HttpServer::Serve, this);
  mg_set_request_handler(ctx_, "/$", &HttpServer::Serve, this);
  return Status::OK();
}

void HttpServer::Stop() {
  if (https_) https_->Stop();
  if (ctx_ != nullptr) {
    mg_stop(ctx_);
    ctx_ = nullptr;
  }
}

int HttpServer::Serve(mg_connection* conn, void* arg) {
  auto* self = static_cast<HttpServer*>(arg);
  const mg_request_info* info = mg_get_request_info(conn);
  HttpResponse r = self->Answer(info->request_method, info->local_uri != nullptr ? info->local_uri : "");
  Reply(conn, r.code, r.reason.c_str(), r.content_type.c_str(), r.body);
  return r.code;
}

HttpResponse HttpServer::Answer(const std::string& method, const std::string& uri) const {
  constexpr const char* kText = "text/plain; charset=utf-8";
  if (method != "GET" && method != "HEAD") return {405, "Method Not Allowed", kText, "method not allowed\n"};
  HttpResponse r;
  r.head_only = method == "HEAD";
  if (uri == "/metrics") {
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = handlers_.metrics != nullptr ? handlers_.metrics->Serialize() : "";
    return r;
  }
  if (uri == "/healthz" || uri == "/readyz") {
    auto& check = uri == "/healthz" ? handlers_.healthy : handlers_.ready;
    std::string detail;
    bool ok = check ? check(&detail) : true;
    if (detail.empty()) detail = ok ? "ok" : "not ready";
    r.code = ok ? 200 : 503;
    r.reason = ok ? "OK" : "Service Unavailable";
    r.body = detail + "\n";
    return r;
  }
  if (uri == "/") {
    r.body = "rolisd: /metrics /healthz /readyz\n";
    return r;
  }
  return {404, "Not Found", kText, "not found\n", r.head_only};
}

}  // namespace rolis::server
