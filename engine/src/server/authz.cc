#include "server/authz.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <chrono>
#include <mutex>

#include "rolis/v1/client.pb.h"
#include "server/config.h"
#include "server/procedures.h"

namespace rolis::server {
namespace {

constexpr std::string_view kScheme = "spiffe://";

std::array<std::atomic<uint64_t>, static_cast<size_t>(PeerKind::kCount)> g_refusals = {};

// At most kBurst refusal lines per kWindow; the first line after a window
// that dropped some says how many.
class RefusalLog {
 public:
  static constexpr int kBurst = 20;
  static constexpr auto kWindow = std::chrono::seconds(10);
  void Write(const PeerIdentity& id, std::string_view method, std::string_view why) {
    uint64_t dropped = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      const auto now = std::chrono::steady_clock::now();
      if (now - window_start_ >= kWindow) {
        window_start_ = now;
        lines_ = 0;
      }
      if (lines_ >= kBurst) {
        suppressed_++;
        return;
      }
      lines_++;
      dropped = suppressed_;
      suppressed_ = 0;
    }
    spdlog::warn("authorization: refused {} to certificate subject=\"{}\" uri_san=\"{}\" ({}): {}{}", method,
                 id.subject, id.uri, PeerKindName(id.kind), why,
                 dropped > 0 ? fmt::format(" ({} earlier refusals not logged)", dropped) : "");
  }

 private:
  std::mutex mu_;
  std::chrono::steady_clock::time_point window_start_{};
  int lines_ = 0;
  uint64_t suppressed_ = 0;
};

RefusalLog g_log;

// "<kind>[/<name>]" after the trust domain.
PeerKind KindOfPath(std::string_view path) {
  std::string_view kind = path, name;
  bool has_name = false;
  if (size_t slash = path.find('/'); slash != std::string_view::npos) {
    kind = path.substr(0, slash);
    name = path.substr(slash + 1);
    has_name = true;
    if (name.empty() || name.find('/') != std::string_view::npos) return PeerKind::kInvalid;
  }
  if (kind == "member") return PeerKind::kMember;
  if (kind == "operator") return has_name ? PeerKind::kInvalid : PeerKind::kOperator;
  if (kind == "client") return PeerKind::kClient;
  if (kind == "client-readonly") return PeerKind::kClientReadOnly;
  return PeerKind::kInvalid;
}

std::string_view Why(PeerKind k) {
  switch (k) {
    case PeerKind::kNone: return "the certificate has no spiffe:// identity (URI SAN)";
    case PeerKind::kInvalid: return "the certificate's identity is not spiffe://<trust domain>/<kind>[/<name>] of a "
                                    "known kind, or it has more than one";
    case PeerKind::kForeign: return "the identity is of another trust domain than --tls-trust-domain";
    default: return "its kind may not make this call";
  }
}

}  // namespace

std::string_view PeerKindName(PeerKind k) {
  switch (k) {
    case PeerKind::kMember: return "member";
    case PeerKind::kOperator: return "operator";
    case PeerKind::kClient: return "client";
    case PeerKind::kClientReadOnly: return "client-readonly";
    case PeerKind::kNone: return "none";
    case PeerKind::kInvalid: return "invalid";
    case PeerKind::kForeign: return "foreign";
    case PeerKind::kCount: break;
  }
  return "?";
}

PeerIdentity ClassifyPeer(const std::vector<std::string>& uri_sans, std::string subject,
                          std::string_view trust_domain) {
  PeerIdentity id;
  id.subject = std::move(subject);
  int found = 0;
  for (const std::string& u : uri_sans) {
    // The scheme is case-insensitive; SPIFFE trust domains and paths are lower case.
    if (u.size() < kScheme.size()) continue;
    bool spiffe = true;
    for (size_t i = 0; i < kScheme.size(); i++) {
      if (std::tolower(static_cast<unsigned char>(u[i])) != kScheme[i]) spiffe = false;
    }
    if (!spiffe) continue;
    found++;
    id.uri = u;
  }
  if (found == 0) {
    id.kind = PeerKind::kNone;
    return id;
  }
  if (found > 1) {
    id.kind = PeerKind::kInvalid;
    return id;
  }
  std::string_view rest = std::string_view(id.uri).substr(kScheme.size());
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) {
    id.kind = PeerKind::kInvalid;
    return id;
  }
  std::string_view domain = rest.substr(0, slash);
  id.kind = KindOfPath(rest.substr(slash + 1));
  if (id.kind != PeerKind::kInvalid && !trust_domain.empty() && domain != trust_domain) id.kind = PeerKind::kForeign;
  return id;
}

bool Allows(PeerKind kind, Access access) {
  switch (kind) {
    case PeerKind::kMember: return access == Access::kReplication || access == Access::kAdminStatus;
    case PeerKind::kOperator: return access != Access::kReplication;
    case PeerKind::kClient:
      return access == Access::kClientRead || access == Access::kClientWrite || access == Access::kAdminStatus;
    case PeerKind::kClientReadOnly: return access == Access::kClientRead || access == Access::kAdminStatus;
    default: return false;
  }
}

bool ExecuteWrites(const v1::ExecuteRequest& req) {
  if (!req.procedure().empty()) return ProcedureWrites(req.procedure());
  for (const v1::Op& op : req.ops()) {
    if (op.kind() != v1::Op::GET && op.kind() != v1::Op::SCAN) return true;
  }
  return false;
}

uint64_t AuthzRefusals(PeerKind kind) { return g_refusals[static_cast<size_t>(kind)].load(std::memory_order_relaxed); }

Authorizer Authorizer::FromConfig(const ServerConfig& c) {
  Options o;
  o.enabled = c.tls_authorize;
  o.trust_domain = c.tls_trust_domain;
  o.accept_plaintext = c.tls_accept_plaintext;
  return Authorizer(std::move(o));
}

bool Authorizer::OverTls(const grpc::ServerContextBase& ctx) {
  auto auth = ctx.auth_context();
  if (!auth) return false;
  for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME)) {
    const std::string_view t(v.data(), v.size());
    if (t == GRPC_SSL_TRANSPORT_SECURITY_TYPE || t == GRPC_TLS_TRANSPORT_SECURITY_TYPE) return true;
  }
  return false;
}

PeerIdentity Authorizer::IdentityOf(const grpc::ServerContextBase& ctx) const {
  std::vector<std::string> uris;
  std::string subject;
  if (auto auth = ctx.auth_context()) {
    for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
      uris.emplace_back(v.data(), v.size());
    }
    for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME)) {
      subject.assign(v.data(), v.size());
    }
  }
  return ClassifyPeer(uris, std::move(subject), o_.trust_domain);
}

grpc::Status Authorizer::Check(const PeerIdentity& id, Access access, std::string_view method) const {
  if (!o_.enabled || Allows(id.kind, access)) return grpc::Status::OK;
  g_refusals[static_cast<size_t>(id.kind)].fetch_add(1, std::memory_order_relaxed);
  const std::string_view why = Why(id.kind);
  g_log.Write(id, method, why);
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      fmt::format("{} refused: certificate {} ({}): {}", method,
                                  id.uri.empty() ? id.subject : id.uri, PeerKindName(id.kind), why));
}

}  // namespace rolis::server
