// Flag and environment parsing of rolisd: defaults, units, validation.
#include "server/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

namespace rolis::server {
namespace {

ParseResult Parse(std::vector<std::string> args) {
  std::vector<const char*> argv = {"rolisd"};
  for (auto& a : args) argv.push_back(a.c_str());
  return ParseConfig(static_cast<int>(argv.size()), argv.data());
}

TEST(ConfigTest, DefaultsRunAStandaloneNode) {
  ParseResult r = Parse({});
  ASSERT_EQ(r.kind, ParseResult::Kind::kOk) << r.message;
  const ServerConfig& c = r.config;
  EXPECT_FALSE(c.replicated());
  EXPECT_GE(c.worker_threads, 1u);
  EXPECT_EQ(c.tables, std::vector<std::string>{"kv"});
  EXPECT_EQ(c.txn_idle_timeout, std::chrono::seconds(30));
  EXPECT_EQ(c.max_key_bytes, 1024u);
  EXPECT_EQ(c.max_value_bytes, 64u * 1024);
  EXPECT_EQ(c.max_message_bytes, 4u * 1024 * 1024);
  EXPECT_EQ(c.execute_retries, 5u);
  EXPECT_EQ(c.ClientAddress(), c.listen);
  EXPECT_NE(c.Summary().find("max_open_txns=10000"), std::string::npos);
  EXPECT_FALSE(c.huge_pages);  // docs/operations.md, "Huge pages"
  EXPECT_NE(c.Summary().find("huge_pages=off"), std::string::npos);
}

TEST(ConfigTest, DurabilityIsDiskWithADataDirAndMemoryWithout) {
  const std::string peers = "--peers=1=127.0.0.1:7100,2=127.0.0.1:7101,3=127.0.0.1:7102";
  ParseResult none = Parse({"--id=1", peers});
  ASSERT_EQ(none.kind, ParseResult::Kind::kOk) << none.message;
  EXPECT_EQ(none.config.durability, Durability::kMemory);
  EXPECT_NE(none.config.Summary().find("durability=memory data_dir=-"), std::string::npos);

  ParseResult disk = Parse({"--id=1", peers, "--data-dir=/var/lib/rolis"});
  ASSERT_EQ(disk.kind, ParseResult::Kind::kOk) << disk.message;
  EXPECT_EQ(disk.config.durability, Durability::kDisk);
  EXPECT_EQ(disk.config.data_dir, "/var/lib/rolis");
  EXPECT_NE(disk.config.Summary().find("durability=disk data_dir=/var/lib/rolis"), std::string::npos);

  ParseResult memory = Parse({"--id=1", peers, "--data-dir=/var/lib/rolis", "--durability=memory"});
  ASSERT_EQ(memory.kind, ParseResult::Kind::kOk) << memory.message;
  EXPECT_EQ(memory.config.durability, Durability::kMemory);

  ::setenv("ROLISD_DATA_DIR", "/data", 1);
  ::setenv("ROLISD_DURABILITY", "disk", 1);
  ParseResult env = Parse({"--id=1", peers});
  ::unsetenv("ROLISD_DATA_DIR");
  ::unsetenv("ROLISD_DURABILITY");
  ASSERT_EQ(env.kind, ParseResult::Kind::kOk) << env.message;
  EXPECT_EQ(env.config.durability, Durability::kDisk);
  EXPECT_EQ(env.config.data_dir, "/data");
}

TEST(ConfigTest, DiskDurabilityWithoutADataDirOrPeersIsAUsageError) {
  const std::string peers = "--peers=1=127.0.0.1:7100,2=127.0.0.1:7101,3=127.0.0.1:7102";
  ParseResult no_dir = Parse({"--id=1", peers, "--durability=disk"});
  EXPECT_EQ(no_dir.kind, ParseResult::Kind::kError);
  EXPECT_EQ(no_dir.exit_code, 2);
  EXPECT_NE(no_dir.message.find("--durability=disk needs --data-dir"), std::string::npos) << no_dir.message;
  ParseResult bad = Parse({"--id=1", peers, "--data-dir=/d", "--durability=flash"});
  EXPECT_EQ(bad.kind, ParseResult::Kind::kError);
  ParseResult standalone = Parse({"--data-dir=/d"});
  EXPECT_EQ(standalone.kind, ParseResult::Kind::kError);
  EXPECT_NE(standalone.message.find("needs --peers"), std::string::npos) << standalone.message;
  EXPECT_EQ(Parse({"--data-dir=/d", "--durability=memory"}).kind, ParseResult::Kind::kOk);
}

TEST(ConfigTest, CheckpointIntervalTakesASizeOfAtLeastOneMiB) {
  const std::string peers = "--peers=1=127.0.0.1:7100,2=127.0.0.1:7101,3=127.0.0.1:7102";
  ParseResult def = Parse({"--id=1", peers, "--data-dir=/d"});
  ASSERT_EQ(def.kind, ParseResult::Kind::kOk) << def.message;
  EXPECT_EQ(def.config.checkpoint_every, uint64_t{256} << 20);
  ParseResult small = Parse({"--id=1", peers, "--data-dir=/d", "--checkpoint-every=4MiB"});
  ASSERT_EQ(small.kind, ParseResult::Kind::kOk) << small.message;
  EXPECT_EQ(small.config.checkpoint_every, uint64_t{4} << 20);
  ::setenv("ROLISD_CHECKPOINT_EVERY", "1GiB", 1);
  ParseResult env = Parse({"--id=1", peers, "--data-dir=/d"});
  ::unsetenv("ROLISD_CHECKPOINT_EVERY");
  ASSERT_EQ(env.kind, ParseResult::Kind::kOk) << env.message;
  EXPECT_EQ(env.config.checkpoint_every, uint64_t{1} << 30);
  for (const char* bad : {"--checkpoint-every=lots", "--checkpoint-every=512KiB"}) {
    ParseResult r = Parse({"--id=1", peers, "--data-dir=/d", bad});
    EXPECT_EQ(r.kind, ParseResult::Kind::kError) << bad;
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.message.find("--checkpoint-every"), std::string::npos) << r.message;
  }
}

TEST(ConfigTest, HugePagesTakeABoolean) {
  ParseResult on = Parse({"--huge-pages=true"});
  ASSERT_EQ(on.kind, ParseResult::Kind::kOk) << on.message;
  EXPECT_TRUE(on.config.huge_pages);
  EXPECT_NE(on.config.Summary().find("huge_pages=on"), std::string::npos);
  ParseResult bad = Parse({"--huge-pages=maybe"});
  EXPECT_EQ(bad.kind, ParseResult::Kind::kError);
  EXPECT_NE(bad.message.find("--huge-pages"), std::string::npos) << bad.message;
}

TEST(ConfigTest, PrefaultMemoryIsNoneByDefaultAndTakesASize) {
  EXPECT_EQ(Parse({}).config.prefault_memory, 0u);  // docs/operations.md, "Prefaulted memory"
  EXPECT_NE(Parse({}).config.Summary().find("prefault_memory=0"), std::string::npos);
  ParseResult two = Parse({"--prefault-memory=2GiB"});
  ASSERT_EQ(two.kind, ParseResult::Kind::kOk) << two.message;
  EXPECT_EQ(two.config.prefault_memory, size_t{2} << 30);
  EXPECT_NE(two.config.Summary().find("prefault_memory=2048MiB"), std::string::npos) << two.config.Summary();
  ParseResult bad = Parse({"--prefault-memory=lots"});
  EXPECT_EQ(bad.kind, ParseResult::Kind::kError);
  EXPECT_NE(bad.message.find("--prefault-memory"), std::string::npos) << bad.message;
}

TEST(ConfigTest, MemoryLimitIsTheCgroupsByDefaultAndTakesASizeOrZero) {
  ParseResult d = Parse({});
  ASSERT_EQ(d.kind, ParseResult::Kind::kOk) << d.message;
  EXPECT_EQ(d.config.memory_limit, std::nullopt);  // docs/operations.md, "Memory limit"
  EXPECT_EQ(d.config.memory_high_watermark, 90u);
  EXPECT_NE(d.config.Summary().find("memory_limit=cgroup memory_high_watermark=90%"), std::string::npos);
  ParseResult one = Parse({"--memory-limit=1GiB", "--memory-high-watermark=80"});
  ASSERT_EQ(one.kind, ParseResult::Kind::kOk) << one.message;
  EXPECT_EQ(one.config.memory_limit, uint64_t{1} << 30);
  EXPECT_EQ(one.config.memory_high_watermark, 80u);
  EXPECT_NE(one.config.Summary().find("memory_limit=1024MiB"), std::string::npos) << one.config.Summary();
  ParseResult none = Parse({"--memory-limit=0"});
  ASSERT_EQ(none.kind, ParseResult::Kind::kOk) << none.message;
  EXPECT_EQ(none.config.memory_limit, uint64_t{0});
  EXPECT_NE(none.config.Summary().find("memory_limit=none"), std::string::npos);
  for (auto [arg, flag] : {std::pair{"--memory-limit=lots", "--memory-limit"},
                           std::pair{"--memory-high-watermark=5", "--memory-high-watermark"},
                           std::pair{"--memory-high-watermark=101", "--memory-high-watermark"}}) {
    ParseResult bad = Parse({arg});
    EXPECT_EQ(bad.kind, ParseResult::Kind::kError) << arg;
    EXPECT_NE(bad.message.find(flag), std::string::npos) << bad.message;
  }
}

TEST(ConfigTest, TheAcceptStreamPortIsAnyFreeOneByDefaultAndMinusOneTurnsItOff) {
  EXPECT_EQ(Parse({}).config.accept_stream_port, 0);
  ParseResult fixed = Parse({"--accept-stream-port=7003"});
  ASSERT_EQ(fixed.kind, ParseResult::Kind::kOk) << fixed.message;
  EXPECT_EQ(fixed.config.accept_stream_port, 7003);
  ParseResult off = Parse({"--accept-stream-port=-1"});
  ASSERT_EQ(off.kind, ParseResult::Kind::kOk) << off.message;
  EXPECT_EQ(off.config.accept_stream_port, -1);
  for (const char* bad : {"--accept-stream-port=65536", "--accept-stream-port=-2", "--accept-stream-port=x"}) {
    ParseResult r = Parse({bad});
    EXPECT_EQ(r.kind, ParseResult::Kind::kError) << bad;
    EXPECT_NE(r.message.find("--accept-stream-port"), std::string::npos) << r.message;
  }
}

TEST(ConfigTest, TheInterfaceOutsideChecksUseParses) {
  ParseResult r = Parse({"--listen=127.0.0.1:7000", "--admin-listen=127.0.0.1:7001", "--metrics-listen=127.0.0.1:7002"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kOk) << r.message;
  EXPECT_EQ(r.config.listen, "127.0.0.1:7000");
  EXPECT_EQ(r.config.admin_listen, "127.0.0.1:7001");
  EXPECT_EQ(r.config.metrics_listen, "127.0.0.1:7002");
}

TEST(ConfigTest, UnitsOfDurationsAndSizes) {
  ParseResult r = Parse({"--txn-idle-timeout=500ms", "--max-value-bytes=1MiB", "--max-message-bytes=8M",
                         "--shutdown-grace=2", "--max-key-bytes=2KiB"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kOk) << r.message;
  EXPECT_EQ(r.config.txn_idle_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(r.config.max_value_bytes, 1024u * 1024);
  EXPECT_EQ(r.config.max_message_bytes, 8u * 1024 * 1024);
  EXPECT_EQ(r.config.shutdown_grace, std::chrono::seconds(2));
  EXPECT_EQ(r.config.max_key_bytes, 2048u);
  EXPECT_FALSE(ParseDuration("5 s"));
  EXPECT_FALSE(ParseDuration("-1s"));
  EXPECT_FALSE(ParseDuration("10y"));
  EXPECT_FALSE(ParseByteSize("1.5MiB"));
  EXPECT_EQ(ParseByteSize("64kb"), 65536u);
}

TEST(ConfigTest, EnvironmentSetsAndFlagWins) {
  setenv("ROLISD_MAX_OPEN_TXNS", "77", 1);
  setenv("ROLISD_LOG_FORMAT", "json", 1);
  ParseResult r = Parse({"--log-format=text"});
  unsetenv("ROLISD_MAX_OPEN_TXNS");
  unsetenv("ROLISD_LOG_FORMAT");
  ASSERT_EQ(r.kind, ParseResult::Kind::kOk) << r.message;
  EXPECT_EQ(r.config.max_open_txns, 77u);
  EXPECT_EQ(r.config.log_format, LogFormat::kText);
}

TEST(ConfigTest, PeersNeedAnIdAmongThem) {
  ParseResult r = Parse({"--peers=1=10.0.0.1:7073,2=10.0.0.2:7073,3=rolis-2.rolis:7073", "--id=2",
                         "--election=builtin"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kOk) << r.message;
  EXPECT_TRUE(r.config.replicated());
  ASSERT_EQ(r.config.peers.size(), 3u);
  EXPECT_EQ(r.config.peers[2].address, "rolis-2.rolis:7073");
  EXPECT_EQ(r.config.election, Election::kBuiltin);

  EXPECT_EQ(Parse({"--peers=1=a:1,2=b:2"}).kind, ParseResult::Kind::kError);          // no --id
  EXPECT_EQ(Parse({"--peers=1=a:1,2=b:2", "--id=3"}).kind, ParseResult::Kind::kError);  // not a member
  EXPECT_EQ(Parse({"--peers=1=a:1,1=b:2", "--id=1"}).kind, ParseResult::Kind::kError);  // duplicate
  EXPECT_EQ(Parse({"--peers=1=a", "--id=1"}).kind, ParseResult::Kind::kError);          // no port
  EXPECT_EQ(Parse({"--peers=x=a:1", "--id=1"}).kind, ParseResult::Kind::kError);        // bad id
  EXPECT_EQ(Parse({"--election=builtin"}).kind, ParseResult::Kind::kError);             // no peers
  EXPECT_EQ(Parse({"--election=raft"}).kind, ParseResult::Kind::kError);
}

// One decider per cluster (docs/replication.md): the control stream unless
// the operator says otherwise; the built-in election decides on the
// control stream, so it cannot run under the operator.
TEST(ConfigTest, TheDeciderIsTheControlStreamUnlessTheOperatorIsNamed) {
  const std::string peers = "--peers=1=a:1,2=b:2,3=c:3";
  ParseResult r = Parse({peers, "--id=1"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kOk) << r.message;
  EXPECT_EQ(r.config.decider, Decider::kControlStream);
  r = Parse({peers, "--id=1", "--decider=operator"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kOk) << r.message;
  EXPECT_EQ(r.config.decider, Decider::kOperator);
  EXPECT_NE(r.config.Summary().find("decider=operator"), std::string::npos) << r.config.Summary();
  ::setenv("ROLISD_DECIDER", "operator", 1);
  r = Parse({peers, "--id=1"});
  ::unsetenv("ROLISD_DECIDER");
  ASSERT_EQ(r.kind, ParseResult::Kind::kOk) << r.message;
  EXPECT_EQ(r.config.decider, Decider::kOperator);
  r = Parse({peers, "--id=1", "--decider=operator", "--election=builtin"});
  EXPECT_EQ(r.kind, ParseResult::Kind::kError);
  EXPECT_NE(r.message.find("--decider=control-stream"), std::string::npos) << r.message;
  EXPECT_EQ(Parse({peers, "--id=1", "--decider=kubernetes"}).kind, ParseResult::Kind::kError);
}

TEST(ConfigTest, BadValuesAreRejectedWithTheFlagName) {
  struct Case {
    std::vector<std::string> args;
    std::string mentions;
  } cases[] = {
      {{"--listen=nohost"}, "--listen"},
      {{"--listen=1.2.3.4:99999"}, "--listen"},
      {{"--txn-idle-timeout=soon"}, "--txn-idle-timeout"},
      {{"--max-value-bytes=lots"}, "--max-value-bytes"},
      {{"--max-value-bytes=8MiB"}, "--max-message-bytes"},
      {{"--tls-cert=/x.pem"}, "--tls-key"},
      {{"--tls-ca=/ca.pem"}, "--tls-ca"},
      // Peers authenticate each other: a replicated member with a
      // certificate needs the CA too.
      {{"--peers=1=a:1,2=b:2", "--id=1", "--tls-cert=/x.pem", "--tls-key=/x.key"}, "--tls-ca"},
      {{"--worker-threads=65"}, "--worker-threads"},
      // Each worker needs a stream of its own.
      {{"--worker-threads=3", "--replication-streams=2"}, "--replication-streams"},
      {{"--replication-streams=65"}, "--replication-streams"},
      {{"--max-open-txns=0"}, "--max-open-txns"},
      {{"--tables=bad/name"}, "--tables"},
      // The benchmark procedures' tables are named bench.* (server/procedures.h).
      {{"--tables=users,bench.bank"}, "reserved"},
      {{"--log-level=loud"}, "--log-level"},
      {{"--no-such-flag"}, "no-such-flag"},
  };
  for (const Case& c : cases) {
    ParseResult r = Parse(c.args);
    EXPECT_EQ(r.kind, ParseResult::Kind::kError) << c.args[0];
    EXPECT_NE(r.message.find(c.mentions), std::string::npos) << c.args[0] << ": " << r.message;
  }
}

// docs/operations.md, "Security model": authorization is on by default once
// client certificates are verified (--tls-ca); the metrics port follows
// --tls-cert.
TEST(ConfigTest, AuthorizationDefaultsOnWithTheCAAndMetricsTLSWithTheCertificate) {
  const std::string cert = "--tls-cert=/x.pem", key = "--tls-key=/x.key", ca = "--tls-ca=/ca.pem";
  ParseResult plain = Parse({});
  ASSERT_EQ(plain.kind, ParseResult::Kind::kOk) << plain.message;
  EXPECT_FALSE(plain.config.tls_authorize);
  EXPECT_FALSE(plain.config.metrics_tls);
  ParseResult tls = Parse({cert, key});
  ASSERT_EQ(tls.kind, ParseResult::Kind::kOk) << tls.message;
  EXPECT_FALSE(tls.config.tls_authorize);
  EXPECT_TRUE(tls.config.metrics_tls);
  ParseResult mtls = Parse({cert, key, ca, "--tls-trust-domain=Rolis.DB.Sample"});
  ASSERT_EQ(mtls.kind, ParseResult::Kind::kOk) << mtls.message;
  EXPECT_TRUE(mtls.config.tls_authorize);
  EXPECT_EQ(mtls.config.tls_trust_domain, "rolis.db.sample");
  ParseResult off = Parse({cert, key, ca, "--tls-authorize=off", "--metrics-tls=off"});
  ASSERT_EQ(off.kind, ParseResult::Kind::kOk) << off.message;
  EXPECT_FALSE(off.config.tls_authorize);
  EXPECT_FALSE(off.config.metrics_tls);
  EXPECT_FALSE(mtls.config.tls_accept_plaintext);
  ParseResult both = Parse({cert, key, ca, "--tls-accept-plaintext"});
  ASSERT_EQ(both.kind, ParseResult::Kind::kOk) << both.message;
  EXPECT_TRUE(both.config.tls_accept_plaintext);
  EXPECT_TRUE(both.config.tls_authorize) << "TLS callers are still authorized";
  ::setenv("ROLISD_TLS_AUTHORIZE", "off", 1);
  ParseResult env = Parse({cert, key, ca});
  ::unsetenv("ROLISD_TLS_AUTHORIZE");
  ASSERT_EQ(env.kind, ParseResult::Kind::kOk) << env.message;
  EXPECT_FALSE(env.config.tls_authorize);

  struct Case {
    std::vector<std::string> args;
    std::string mentions;
  } bad[] = {
      {{cert, key, "--tls-authorize=on"}, "--tls-ca"},
      {{cert, key, ca, "--tls-authorize=maybe"}, "--tls-authorize"},
      {{cert, key, ca, "--tls-trust-domain=spiffe://rolis.db.sample"}, "--tls-trust-domain"},
      {{cert, key, ca, "--tls-authorize=off", "--tls-trust-domain=rolis.db.sample"}, "--tls-trust-domain"},
      {{"--metrics-tls=on"}, "--metrics-tls"},
      {{cert, key, "--tls-accept-plaintext"}, "--tls-accept-plaintext needs"},
      {{"--tls-accept-plaintext"}, "--tls-accept-plaintext needs"},
  };
  for (const Case& c : bad) {
    ParseResult r = Parse(c.args);
    EXPECT_EQ(r.kind, ParseResult::Kind::kError) << c.args.back();
    EXPECT_NE(r.message.find(c.mentions), std::string::npos) << c.args.back() << ": " << r.message;
  }
}

TEST(ConfigTest, ReplicationStreamsDefaultToTheWorkersAndMayExceedThem) {
  ParseResult r = Parse({"--worker-threads=3"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kOk) << r.message;
  EXPECT_EQ(r.config.replication_streams, 3u);
  r = Parse({"--worker-threads=2", "--replication-streams=8"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kOk) << r.message;
  EXPECT_EQ(r.config.worker_threads, 2u);
  EXPECT_EQ(r.config.replication_streams, 8u);
}

TEST(ConfigTest, TablesAlwaysIncludeKv) {
  ParseResult r = Parse({"--tables=users,orders,users"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kOk) << r.message;
  EXPECT_EQ(r.config.tables, (std::vector<std::string>{"kv", "users", "orders"}));
}

TEST(ConfigTest, HelpNamesEveryFlagAndItsVariable) {
  ParseResult r = Parse({"--help"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kHelp);
  for (const char* s : {"--listen", "--admin-listen", "--metrics-listen", "--worker-threads", "--max-key-bytes",
                        "--max-value-bytes", "--max-ops-per-txn", "--max-open-txns", "--max-scan-limit",
                        "--max-message-bytes", "--txn-idle-timeout", "--tls-cert", "--tls-key", "--tls-ca",
                        "--log-format", "--log-level", "--peers", "--id", "--election", "--huge-pages", "--prefault-memory", "ROLISD_LISTEN",
                        "ROLISD_MAX_OPEN_TXNS"}) {
    EXPECT_NE(r.message.find(s), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace rolis::server
