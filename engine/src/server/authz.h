// Authorization by certificate identity (docs/operations.md, "Security
// model"). Every certificate the cluster's CA issues carries one URI SAN
// spiffe://<trust domain>/<kind>[/<name>]; the kind decides what its holder
// may call:
//
//   member           Replication.* and the accept stream; Admin.Status
//   operator         every Admin RPC; the Rolis client service
//   client/<name>    the Rolis client service
//   client-readonly/<name>
//                    the Rolis client service, calls that write refused
//   any of them      Admin.Status (rolisctl status works with any of them)
//
// A certificate without such a SAN, with a SAN of an unknown kind, or (with
// --tls-trust-domain) of another trust domain may call nothing. Refusals are
// PERMISSION_DENIED, one log line naming the certificate and the method
// (rate-limited: a flood of refused calls cannot fill the log) and
// rolis_authz_refusals_total{kind}. With --tls-authorize=off nothing is
// checked (every certificate the CA signed may call everything). With
// --tls-accept-plaintext a call that came in plaintext has no identity and
// is not checked either, as with --tls-authorize=off: the window of a
// transition between plaintext and TLS (docs/operations.md, "Turning TLS on
// or off for a running cluster"); calls over TLS are checked as always.
//
// The checks are plain functions of the identity, so that the gRPC services
// (client, admin, replication) and the accept stream's TLS handshake share
// one table.
#pragma once

#include <grpcpp/grpcpp.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rolis::v1 {
class ExecuteRequest;
}

namespace rolis::server {

struct ServerConfig;

// What a certificate says its holder is. kNone: no spiffe:// URI SAN (a
// legacy certificate); kInvalid: more than one, or one that is not of the
// form above; kForeign: another trust domain than --tls-trust-domain.
enum class PeerKind : uint8_t { kMember, kOperator, kClient, kClientReadOnly, kNone, kInvalid, kForeign, kCount };
std::string_view PeerKindName(PeerKind k);

// What a call needs.
enum class Access : uint8_t {
  kClientRead,   // Rolis calls that cannot write
  kClientWrite,  // Rolis calls that may write
  kAdminStatus,  // Admin.Status
  kAdmin,        // every other Admin RPC
  kReplication,  // Replication.* and the accept stream
};

struct PeerIdentity {
  PeerKind kind = PeerKind::kNone;
  std::string uri;      // the identity SAN ("" for kNone)
  std::string subject;  // the certificate's subject, for log lines
};

// The identity in a certificate's URI SANs. trust_domain "" accepts any.
PeerIdentity ClassifyPeer(const std::vector<std::string>& uri_sans, std::string subject,
                          std::string_view trust_domain);

// The table above.
bool Allows(PeerKind kind, Access access);

// Whether a one-shot transaction (Execute, a stream's request) writes: any
// op that is not a GET or a SCAN, or a procedure that is not read-only
// (procedures.h).
bool ExecuteWrites(const v1::ExecuteRequest& req);

// Refusals since the process started, by the refused certificate's kind
// (process-wide: the client ports and the replication port count together).
uint64_t AuthzRefusals(PeerKind kind);

class Authorizer {
 public:
  struct Options {
    bool enabled = false;       // --tls-authorize
    std::string trust_domain;   // --tls-trust-domain
    bool accept_plaintext = false;  // --tls-accept-plaintext
  };
  Authorizer() = default;
  explicit Authorizer(Options o) : o_(std::move(o)) {}
  static Authorizer FromConfig(const ServerConfig& c);

  bool enabled() const { return o_.enabled; }

  // The identity of a gRPC call's peer (its verified certificate).
  PeerIdentity IdentityOf(const grpc::ServerContextBase& ctx) const;

  // OK, or PERMISSION_DENIED (logged and counted) when the identity may not
  // make `method`. Always OK when disabled.
  grpc::Status Check(const PeerIdentity& id, Access access, std::string_view method) const;
  grpc::Status Check(const grpc::ServerContextBase& ctx, Access access, std::string_view method) const {
    if (Skips(ctx)) return grpc::Status::OK;
    return Check(IdentityOf(ctx), access, method);
  }
  // True when the call is not checked: disabled, or a plaintext call with
  // --tls-accept-plaintext.
  bool Skips(const grpc::ServerContextBase& ctx) const {
    return !o_.enabled || (o_.accept_plaintext && !OverTls(ctx));
  }
  // Whether the call came over TLS (its transport says "ssl" or "tls").
  static bool OverTls(const grpc::ServerContextBase& ctx);
  // The same for a certificate's SANs and subject (the accept stream).
  grpc::Status CheckCertificate(const std::vector<std::string>& uri_sans, std::string subject, Access access,
                                std::string_view method) const {
    if (!o_.enabled) return grpc::Status::OK;
    return Check(ClassifyPeer(uri_sans, std::move(subject), o_.trust_domain), access, method);
  }

 private:
  Options o_;
};

}  // namespace rolis::server
