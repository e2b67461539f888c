// The authorization table and the reading of identities (server/authz.h);
// the same checks over real TLS connections: test/server/authz_test.go and
// test/replication/authz_test.go.
#include "server/authz.h"

#include <gtest/gtest.h>

#include "rolis/v1/client.pb.h"

namespace rolis::server {
namespace {

PeerKind Kind(std::vector<std::string> uris, std::string_view domain = "") {
  return ClassifyPeer(uris, "CN=x", domain).kind;
}

TEST(AuthzTest, ReadsTheKindFromTheSpiffeUri) {
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample/member"}), PeerKind::kMember);
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample/member/2"}), PeerKind::kMember);
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample/operator"}), PeerKind::kOperator);
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample/client/app"}), PeerKind::kClient);
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample/client-readonly/reports"}), PeerKind::kClientReadOnly);
  // Other URI SANs are ignored; the scheme is case-insensitive.
  EXPECT_EQ(Kind({"https://example.com/x", "SPIFFE://rolis.db.sample/client/app"}), PeerKind::kClient);
}

TEST(AuthzTest, NoIdentityMalformedOrAmbiguousIsNotAKind) {
  EXPECT_EQ(Kind({}), PeerKind::kNone);
  EXPECT_EQ(Kind({"https://example.com/member"}), PeerKind::kNone);
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample/admin"}), PeerKind::kInvalid);
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample/operator/bob"}), PeerKind::kInvalid);
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample/member/"}), PeerKind::kInvalid);
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample/client/a/b"}), PeerKind::kInvalid);
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample"}), PeerKind::kInvalid);
  EXPECT_EQ(Kind({"spiffe:///member"}), PeerKind::kInvalid);
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample/member", "spiffe://rolis.db.sample/operator"}), PeerKind::kInvalid);
}

TEST(AuthzTest, AnotherTrustDomainIsForeignWhenOneIsSet) {
  EXPECT_EQ(Kind({"spiffe://rolis.db.sample/operator"}, "rolis.db.sample"), PeerKind::kOperator);
  EXPECT_EQ(Kind({"spiffe://rolis.other.sample/operator"}, "rolis.db.sample"), PeerKind::kForeign);
  EXPECT_EQ(Kind({"spiffe://rolis.other.sample/operator"}), PeerKind::kOperator);
}

TEST(AuthzTest, TheTableOfWhoMayCallWhat) {
  using A = Access;
  struct Row {
    PeerKind kind;
    bool client_read, client_write, admin_status, admin, replication;
  };
  const Row rows[] = {
      {PeerKind::kMember, false, false, true, false, true},
      {PeerKind::kOperator, true, true, true, true, false},
      {PeerKind::kClient, true, true, true, false, false},
      {PeerKind::kClientReadOnly, true, false, true, false, false},
      {PeerKind::kNone, false, false, false, false, false},
      {PeerKind::kInvalid, false, false, false, false, false},
      {PeerKind::kForeign, false, false, false, false, false},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(PeerKindName(r.kind)));
    EXPECT_EQ(Allows(r.kind, A::kClientRead), r.client_read);
    EXPECT_EQ(Allows(r.kind, A::kClientWrite), r.client_write);
    EXPECT_EQ(Allows(r.kind, A::kAdminStatus), r.admin_status);
    EXPECT_EQ(Allows(r.kind, A::kAdmin), r.admin);
    EXPECT_EQ(Allows(r.kind, A::kReplication), r.replication);
  }
}

TEST(AuthzTest, CheckRefusesWithPermissionDeniedAndCountsByKind) {
  Authorizer on(Authorizer::Options{true, "rolis.db.sample"});
  const uint64_t before = AuthzRefusals(PeerKind::kClient);
  grpc::Status st = on.CheckCertificate({"spiffe://rolis.db.sample/client/app"}, "CN=app", Access::kAdmin,
                                        "rolis.v1.Admin/PrepareFailover");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("spiffe://rolis.db.sample/client/app"), std::string::npos) << st.error_message();
  EXPECT_EQ(AuthzRefusals(PeerKind::kClient), before + 1);
  EXPECT_TRUE(on.CheckCertificate({"spiffe://rolis.db.sample/operator"}, "CN=op", Access::kAdmin, "m").ok());

  const uint64_t foreign = AuthzRefusals(PeerKind::kForeign);
  EXPECT_FALSE(on.CheckCertificate({"spiffe://rolis.x.y/operator"}, "CN=op", Access::kAdmin, "m").ok());
  EXPECT_EQ(AuthzRefusals(PeerKind::kForeign), foreign + 1);

  // Off: every certificate the CA signed may call everything.
  Authorizer off;
  EXPECT_TRUE(off.CheckCertificate({}, "CN=legacy", Access::kReplication, "m").ok());
}

TEST(AuthzTest, AnExecuteWritesUnlessItOnlyReads) {
  v1::ExecuteRequest req;
  EXPECT_FALSE(ExecuteWrites(req));
  req.add_ops()->set_kind(v1::Op::GET);
  req.add_ops()->set_kind(v1::Op::SCAN);
  EXPECT_FALSE(ExecuteWrites(req));
  for (auto k : {v1::Op::PUT, v1::Op::DELETE, v1::Op::PUT_IF, v1::Op::KIND_UNSPECIFIED}) {
    v1::ExecuteRequest w = req;
    w.add_ops()->set_kind(k);
    EXPECT_TRUE(ExecuteWrites(w)) << k;
  }
}

}  // namespace
}  // namespace rolis::server
