// The certificate files' context (server/tls_context_files.h): read once
// the refresh interval has passed, the last good one kept when a reading
// fails, verification and version as the spec says.
#include "server/tls_context_files.h"

#include <gtest/gtest.h>
#include <openssl/x509.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace rolis::server {
namespace {

bool Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

class TlsContextFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tls-context-files-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { Sh("rm -rf " + dir_); }

  // A self-signed certificate with CN=cn at <dir>/<file>.pem, its key at <dir>/<file>.key.
  bool MakeCert(const std::string& file, const std::string& cn) {
    return Sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=" + cn +
              " -keyout " + Path(file + ".key") + " -out " + Path(file + ".pem"));
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  TlsContextSpec Spec(std::chrono::seconds refresh) const {
    TlsContextSpec s;
    s.cert = Path("tls.pem");
    s.key = Path("tls.key");
    s.refresh = refresh;
    return s;
  }

  std::string dir_;
};

std::string CommonName(const std::shared_ptr<SSL_CTX>& ctx) {
  X509* cert = ctx ? SSL_CTX_get0_certificate(ctx.get()) : nullptr;
  if (cert == nullptr) return "";
  char buf[256];
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof(buf));
  return buf;
}

TEST_F(TlsContextFilesTest, ReadsTheFilesAgainOnceTheRefreshIntervalPassed) {
  ASSERT_TRUE(MakeCert("tls", "one"));
  TlsContextFiles every_time(Spec(std::chrono::seconds(0)));
  TlsContextFiles hourly(Spec(std::chrono::seconds(3600)));
  std::string error;
  EXPECT_EQ(CommonName(every_time.Get(&error)), "one") << error;
  const auto first = hourly.Get(&error);
  EXPECT_EQ(CommonName(first), "one") << error;

  ASSERT_TRUE(MakeCert("tls", "two"));  // a rotation
  EXPECT_EQ(CommonName(every_time.Get(&error)), "two") << "read again: the interval passed";
  EXPECT_EQ(hourly.Get(&error), first) << "not read again within the interval";
}

TEST_F(TlsContextFilesTest, AFailedReadingKeepsTheLastGoodContext) {
  ASSERT_TRUE(MakeCert("tls", "good"));
  TlsContextFiles files(Spec(std::chrono::seconds(0)));
  std::string error;
  const auto good = files.Get(&error);
  ASSERT_TRUE(good) << error;

  std::ofstream(Path("tls.pem")) << "-----BEGIN CERTIFICATE-----\nhalf";  // a rotation half written
  error.clear();
  EXPECT_EQ(files.Get(&error), good);
  EXPECT_NE(error.find("cannot use --tls-cert " + Path("tls.pem")), std::string::npos) << error;

  ASSERT_TRUE(MakeCert("other", "other"));
  ASSERT_TRUE(Sh("cp " + Path("other.pem") + " " + Path("tls.pem")));  // a certificate without its key
  error.clear();
  EXPECT_EQ(files.Get(&error), good);
  EXPECT_NE(error.find("cannot use --tls-key " + Path("tls.key")), std::string::npos) << error;
}

TEST_F(TlsContextFilesTest, FilesThatNeverLoadAreAnError) {
  std::string error;
  EXPECT_FALSE(TlsContextFiles(Spec(std::chrono::seconds(60))).Get(&error));
  EXPECT_NE(error.find("cannot use --tls-cert " + Path("tls.pem")), std::string::npos) << error;

  ASSERT_TRUE(MakeCert("tls", "member"));
  TlsContextSpec spec = Spec(std::chrono::seconds(60));
  spec.ca = Path("missing-ca.pem");
  error.clear();
  EXPECT_FALSE(TlsContextFiles(spec).Get(&error));
  EXPECT_NE(error.find("cannot use --tls-ca " + spec.ca), std::string::npos) << error;
}

TEST_F(TlsContextFilesTest, TheSpecSetsVerificationVersionAndMode) {
  ASSERT_TRUE(MakeCert("tls", "member"));
  std::string error;
  const auto open = TlsContextFiles(Spec(std::chrono::seconds(60))).Get(&error);
  ASSERT_TRUE(open) << error;
  EXPECT_EQ(SSL_CTX_get_verify_mode(open.get()), SSL_VERIFY_NONE) << "no CA: no client certificate asked for";
  EXPECT_EQ(SSL_CTX_get_min_proto_version(open.get()), TLS1_2_VERSION);

  TlsContextSpec spec = Spec(std::chrono::seconds(60));
  spec.ca = Path("tls.pem");
  spec.server = false;
  spec.min_version = TLS1_3_VERSION;
  spec.mode = SSL_MODE_ENABLE_PARTIAL_WRITE;
  const auto mutual = TlsContextFiles(spec).Get(&error);
  ASSERT_TRUE(mutual) << error;
  EXPECT_EQ(SSL_CTX_get_verify_mode(mutual.get()), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
  EXPECT_EQ(SSL_CTX_get_min_proto_version(mutual.get()), TLS1_3_VERSION);
  EXPECT_TRUE(SSL_CTX_get_mode(mutual.get()) & SSL_MODE_ENABLE_PARTIAL_WRITE);
}

}  // namespace
}  // namespace rolis::server
