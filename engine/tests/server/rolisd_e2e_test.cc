// End to end: starts the real rolisd binary on loopback (ephemeral ports),
// talks to it with the generated C++ stubs and over HTTP, then stops it with
// SIGTERM. The thorough client-side suites live with the Go client.
#include <arpa/inet.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rolis/v1/admin.grpc.pb.h"
#include "rolis/v1/client.grpc.pb.h"

#ifndef ROLISD_BIN
#error "ROLISD_BIN must name the rolisd binary"
#endif

namespace {

using grpc::StatusCode;
using namespace std::chrono_literals;

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// GET over HTTP/1.1 on 127.0.0.1:port; returns the status code (0 on error).
int HttpGet(int port, const std::string& path, std::string* body) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return 0;
  }
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return 0;
  }
  std::string resp;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) resp.append(buf, n);
  close(fd);
  if (resp.size() < 12) return 0;
  size_t split = resp.find("\r\n\r\n");
  if (body != nullptr) *body = split == std::string::npos ? "" : resp.substr(split + 4);
  return std::atoi(resp.substr(9, 3).c_str());
}

class RolisdTest : public ::testing::Test {
 protected:
  void SetUp() override {}

  // Starts rolisd with the common flags plus `extra`; waits for /healthz.
  void StartRolisd(std::vector<std::string> extra = {}) {
    client_port_ = FreePort();
    admin_port_ = FreePort();
    metrics_port_ = FreePort();
    std::vector<std::string> args = {
        ROLISD_BIN,
        "--listen=127.0.0.1:" + std::to_string(client_port_),
        "--admin-listen=127.0.0.1:" + std::to_string(admin_port_),
        "--metrics-listen=127.0.0.1:" + std::to_string(metrics_port_),
        // 4 workers: while the engine allows one open transaction per
        // worker, rolisd can hold 3 interactive transactions at once.
        "--worker-threads=4",
        "--max-key-bytes=64",
        "--log-level=warn",
    };
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 400 && HttpGet(metrics_port_, "/healthz", nullptr) != 200; i++) std::this_thread::sleep_for(50ms);
    ASSERT_EQ(HttpGet(metrics_port_, "/healthz", nullptr), 200) << "rolisd did not come up";
  }

  void Connect(std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials()) {
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(client_port_), creds);
    admin_channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(admin_port_), creds);
    ASSERT_TRUE(channel_->WaitForConnected(std::chrono::system_clock::now() + 20s)) << "rolisd did not come up";
    ASSERT_TRUE(admin_channel_->WaitForConnected(std::chrono::system_clock::now() + 10s));
    stub_ = rolis::v1::Rolis::NewStub(channel_);
    admin_ = rolis::v1::Admin::NewStub(admin_channel_);
  }

  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Sends SIGTERM and returns the exit status (-1 if it did not exit in time).
  int Terminate() {
    kill(pid_, SIGTERM);
    for (int i = 0; i < 300; i++) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(50ms);
    }
    return -1;
  }

  grpc::Status Execute(const rolis::v1::ExecuteRequest& req, rolis::v1::ExecuteResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    return stub_->Execute(&ctx, req, resp);
  }
  grpc::Status Put(const std::string& k, const std::string& v) {
    rolis::v1::ExecuteRequest req;
    auto* op = req.add_ops();
    op->set_kind(rolis::v1::Op::PUT);
    op->set_key(k);
    op->set_value(v);
    rolis::v1::ExecuteResponse resp;
    return Execute(req, &resp);
  }
  std::string Get(const std::string& k) {
    rolis::v1::ExecuteRequest req;
    auto* op = req.add_ops();
    op->set_kind(rolis::v1::Op::GET);
    op->set_key(k);
    rolis::v1::ExecuteResponse resp;
    grpc::Status st = Execute(req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    if (!st.ok() || !resp.results(0).found()) return "<absent>";
    return resp.results(0).value();
  }
  uint64_t Begin(uint32_t idle_ms = 0) {
    grpc::ClientContext ctx;
    rolis::v1::BeginRequest req;
    req.set_idle_timeout_ms(idle_ms);
    rolis::v1::BeginResponse resp;
    grpc::Status st = stub_->Begin(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.txn_id();
  }
  grpc::Status TxnPut(uint64_t id, const std::string& k, const std::string& v) {
    grpc::ClientContext ctx;
    rolis::v1::PutRequest req;
    req.set_txn_id(id);
    req.set_key(k);
    req.set_value(v);
    rolis::v1::PutResponse resp;
    return stub_->Put(&ctx, req, &resp);
  }
  grpc::Status TxnGet(uint64_t id, const std::string& k, rolis::v1::GetResponse* resp) {
    grpc::ClientContext ctx;
    rolis::v1::GetRequest req;
    req.set_txn_id(id);
    req.set_key(k);
    return stub_->Get(&ctx, req, resp);
  }
  grpc::Status Commit(uint64_t id) {
    grpc::ClientContext ctx;
    rolis::v1::CommitRequest req;
    req.set_txn_id(id);
    rolis::v1::CommitResponse resp;
    return stub_->Commit(&ctx, req, &resp);
  }

  int client_port_ = 0, admin_port_ = 0, metrics_port_ = 0;
  pid_t pid_ = -1;
  std::shared_ptr<grpc::Channel> channel_, admin_channel_;
  std::unique_ptr<rolis::v1::Rolis::Stub> stub_;
  std::unique_ptr<rolis::v1::Admin::Stub> admin_;
};

TEST_F(RolisdTest, ServesTheClientAdminHealthAndMetricsApisAndStopsCleanlyOnSigterm) {
  StartRolisd();
  Connect();
  // Put / Get, one-shot and interactive.
  ASSERT_TRUE(Put("hello", "world").ok());
  EXPECT_EQ(Get("hello"), "world");
  uint64_t t = Begin();
  ASSERT_TRUE(TxnPut(t, "i1", "v1").ok());
  ASSERT_TRUE(Commit(t).ok());
  EXPECT_EQ(Get("i1"), "v1");

  // A conflicting interactive pair: the second committer is ABORTED.
  ASSERT_TRUE(Put("x", "0").ok());
  uint64_t a = Begin(), b = Begin();
  rolis::v1::GetResponse g;
  ASSERT_TRUE(TxnGet(a, "x", &g).ok());
  ASSERT_TRUE(TxnGet(b, "x", &g).ok());
  ASSERT_TRUE(TxnPut(a, "x", "a").ok());
  ASSERT_TRUE(TxnPut(b, "x", "b").ok());
  ASSERT_TRUE(Commit(a).ok());
  EXPECT_EQ(Commit(b).error_code(), StatusCode::ABORTED);
  EXPECT_EQ(Get("x"), "a");

  // An oversized key is INVALID_ARGUMENT and changes nothing.
  {
    rolis::v1::ExecuteRequest req;
    auto* op = req.add_ops();
    op->set_kind(rolis::v1::Op::PUT);
    op->set_key("hello");
    op->set_value("changed");
    op = req.add_ops();
    op->set_kind(rolis::v1::Op::PUT);
    op->set_key(std::string(65, 'k'));
    rolis::v1::ExecuteResponse resp;
    EXPECT_EQ(Execute(req, &resp).error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(Get("hello"), "world");
  }

  // An expired transaction is NOT_FOUND.
  uint64_t idle = Begin(100);
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(TxnPut(idle, "k", "v").error_code(), StatusCode::NOT_FOUND);

  // Pipelined one-shots on ExecuteStream: every seq answered once.
  {
    grpc::ClientContext ctx;
    auto stream = stub_->ExecuteStream(&ctx);
    constexpr int kN = 200;
    std::thread writer([&] {
      for (int i = 0; i < kN; i++) {
        rolis::v1::ExecuteRequest req;
        req.set_seq(i + 1);
        auto* op = req.add_ops();
        op->set_kind(rolis::v1::Op::PUT);
        op->set_key("s" + std::to_string(i));
        op->set_value(std::to_string(i));
        stream->Write(req);
      }
      stream->WritesDone();
    });
    std::set<uint64_t> seqs;
    rolis::v1::ExecuteResponse resp;
    while (stream->Read(&resp)) {
      EXPECT_EQ(resp.error_code(), 0) << resp.error_message();
      seqs.insert(resp.seq());
    }
    writer.join();
    EXPECT_TRUE(stream->Finish().ok());
    EXPECT_EQ(seqs.size(), static_cast<size_t>(kN));
    EXPECT_EQ(Get("s199"), "199");
  }

  // Admin Status of a standalone node; failover is not configured.
  {
    grpc::ClientContext ctx;
    rolis::v1::StatusResponse st;
    ASSERT_TRUE(admin_->Status(&ctx, rolis::v1::StatusRequest(), &st).ok());
    EXPECT_EQ(st.role(), rolis::v1::STANDALONE);
    EXPECT_EQ(st.epoch(), 1u);
    EXPECT_EQ(st.streams_size(), 4);
    EXPECT_EQ(st.worker_threads(), 4u);
    EXPECT_TRUE(st.healthy());
    EXPECT_FALSE(st.version().empty());
    EXPECT_GE(st.committed_txns(), 5u);
    EXPECT_GT(st.watermark().ts(), 0u);
    grpc::ClientContext ctx2;
    rolis::v1::PrepareFailoverResponse pf;
    grpc::Status s = admin_->PrepareFailover(&ctx2, rolis::v1::PrepareFailoverRequest(), &pf);
    EXPECT_EQ(s.error_code(), StatusCode::UNIMPLEMENTED);
    EXPECT_NE(s.error_message().find("replication not configured"), std::string::npos);
  }

  // grpc.health.v1: an empty HealthCheckRequest; SERVING is field 1 = 1.
  {
    grpc::GenericStub generic(channel_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1), response;
    std::promise<grpc::Status> done;
    generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                      [&](grpc::Status s) { done.set_value(s); });
    ASSERT_TRUE(done.get_future().get().ok());
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(response.Dump(&slices).ok());
    std::string bytes;
    for (auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    EXPECT_EQ(bytes, std::string("\x08\x01", 2));
  }

  // HTTP: /metrics, /healthz, /readyz.
  std::string body;
  ASSERT_EQ(HttpGet(metrics_port_, "/metrics", &body), 200);
  for (const char* want : {"rolis_commits_total ", "rolis_aborts_total{reason=\"conflict\"} ",
                           "rolis_aborts_total{reason=\"expired\"} 1", "rolis_txn_latency_seconds_bucket",
                           "rolis_inflight_txns", "rolis_open_txns 0", "process_resident_memory_bytes", "rolis_role{role=\"standalone\"} 1",
                           "rolis_epoch 1", "rolis_watermark_timestamp_seconds 1",
                           "rolis_replication_lag_seconds{stream=\"1\"} 0",
                           "rolis_requests_total{code=\"INVALID_ARGUMENT\",method=\"Execute\"} 1",
                           "rolis_requests_total{code=\"NOT_FOUND\",method=\"Put\"} 1"}) {
    EXPECT_NE(body.find(want), std::string::npos) << want;
  }
  EXPECT_EQ(HttpGet(metrics_port_, "/healthz", &body), 200);
  EXPECT_EQ(HttpGet(metrics_port_, "/readyz", &body), 200);
  EXPECT_EQ(HttpGet(metrics_port_, "/nope", &body), 404);

  // SIGTERM with an open interactive transaction: exit 0.
  uint64_t open = Begin();
  ASSERT_TRUE(TxnPut(open, "never", "committed").ok());
  EXPECT_EQ(Terminate(), 0);
}

// ---------------------------------------------------------------------------
// TLS: certificates made with the openssl command line.

std::string ReadFile(const std::string& path) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  fclose(f);
  return out;
}

bool Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

// Makes <dir>/<ca>.pem/.key, and <dir>/<name>.pem/.key signed by it.
bool MakeCa(const std::string& dir, const std::string& ca) {
  return Sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" + ca + " -keyout " + dir + "/" + ca +
            ".key -out " + dir + "/" + ca + ".pem");
}
bool MakeCert(const std::string& dir, const std::string& ca, const std::string& name, bool server) {
  std::string ext = dir + "/" + name + ".ext";
  FILE* f = fopen(ext.c_str(), "w");
  if (f == nullptr) return false;
  fprintf(f, server ? "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
                    : "extendedKeyUsage=clientAuth\n");
  fclose(f);
  return Sh("openssl req -newkey rsa:2048 -nodes -subj /CN=" + name + " -keyout " + dir + "/" + name + ".key -out " +
            dir + "/" + name + ".csr") &&
         Sh("openssl x509 -req -days 2 -in " + dir + "/" + name + ".csr -CA " + dir + "/" + ca + ".pem -CAkey " + dir +
            "/" + ca + ".key -CAcreateserial -extfile " + ext + " -out " + dir + "/" + name + ".pem");
}

std::shared_ptr<grpc::ChannelCredentials> Tls(const std::string& dir, const std::string& ca, const std::string& client) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = ReadFile(dir + "/" + ca + ".pem");
  if (!client.empty()) {
    o.pem_cert_chain = ReadFile(dir + "/" + client + ".pem");
    o.pem_private_key = ReadFile(dir + "/" + client + ".key");
  }
  return grpc::SslCredentials(o);
}

bool AdminReaches(int port, std::shared_ptr<grpc::ChannelCredentials> creds) {
  auto ch = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), creds);
  auto stub = rolis::v1::Admin::NewStub(ch);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  rolis::v1::StatusResponse resp;
  return stub->Status(&ctx, rolis::v1::StatusRequest(), &resp).ok();
}

bool Reaches(int port, std::shared_ptr<grpc::ChannelCredentials> creds) {
  auto ch = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), creds);
  auto stub = rolis::v1::Rolis::NewStub(ch);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  rolis::v1::ExecuteRequest req;
  auto* op = req.add_ops();
  op->set_kind(rolis::v1::Op::PUT);
  op->set_key("tls");
  op->set_value("ok");
  rolis::v1::ExecuteResponse resp;
  return stub->Execute(&ctx, req, &resp).ok();
}

TEST_F(RolisdTest, MutualTlsRefusesClientsWithoutAGoodCertificateAndPicksUpRotatedFiles) {
  char tmpl[] = "/tmp/rolisd-tls-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  ASSERT_TRUE(MakeCa(dir, "ca") && MakeCert(dir, "ca", "server", true) && MakeCert(dir, "ca", "client", false));
  ASSERT_TRUE(MakeCa(dir, "other") && MakeCert(dir, "other", "stranger", false));
  // The files rolisd watches.
  ASSERT_TRUE(Sh("cp " + dir + "/server.pem " + dir + "/tls.crt && cp " + dir + "/server.key " + dir +
                 "/tls.key && cp " + dir + "/ca.pem " + dir + "/tls-ca.pem"));
  // Certificates without an identity (legacy): authorization off, so that
  // any certificate the CA signed is served (authorization by identity:
  // test/server/authz_test.go); the metrics port stays plain HTTP for the
  // fixture's readiness wait.
  StartRolisd({"--tls-cert=" + dir + "/tls.crt", "--tls-key=" + dir + "/tls.key", "--tls-ca=" + dir + "/tls-ca.pem",
               "--tls-refresh-interval=1s", "--tls-authorize=off", "--metrics-tls=off"});

  EXPECT_TRUE(Reaches(client_port_, Tls(dir, "ca", "client")));
  EXPECT_FALSE(Reaches(client_port_, Tls(dir, "ca", "")));           // no client certificate
  EXPECT_FALSE(Reaches(client_port_, Tls(dir, "ca", "stranger")));   // client certificate of another CA
  EXPECT_FALSE(Reaches(client_port_, Tls(dir, "other", "client")));  // the client does not trust the server
  EXPECT_FALSE(Reaches(client_port_, grpc::InsecureChannelCredentials()));
  EXPECT_TRUE(AdminReaches(admin_port_, Tls(dir, "ca", "client")));
  EXPECT_FALSE(AdminReaches(admin_port_, Tls(dir, "ca", "")));

  // cert-manager style rotation to a new CA: new connections use the new files.
  ASSERT_TRUE(MakeCert(dir, "other", "server2", true));
  ASSERT_TRUE(Sh("cp " + dir + "/server2.key " + dir + "/tls.key && cp " + dir + "/server2.pem " + dir +
                 "/tls.crt && cp " + dir + "/other.pem " + dir + "/tls-ca.pem"));
  bool rotated = false;
  for (int i = 0; i < 40 && !rotated; i++) {
    std::this_thread::sleep_for(250ms);
    rotated = Reaches(client_port_, Tls(dir, "other", "stranger"));
  }
  EXPECT_TRUE(rotated);
  EXPECT_FALSE(Reaches(client_port_, Tls(dir, "ca", "client")));
  EXPECT_EQ(Terminate(), 0);
  Sh("rm -rf " + dir);
}

}  // namespace
