#include "server/config.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <sstream>
#include <thread>

#include "server/procedures.h"

namespace rolis::server {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::optional<uint64_t> ParseUint(std::string_view s) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string FormatDuration(std::chrono::milliseconds d) {
  auto ms = d.count();
  if (ms % 60000 == 0 && ms != 0) return fmt::format("{}m", ms / 60000);
  if (ms % 1000 == 0 && ms != 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

std::string FormatBytes(size_t b) {
  if (b != 0 && b % (1024 * 1024) == 0) return fmt::format("{}MiB", b / (1024 * 1024));
  if (b != 0 && b % 1024 == 0) return fmt::format("{}KiB", b / 1024);
  return fmt::format("{}", b);
}

}  // namespace

std::optional<std::chrono::milliseconds> ParseDuration(const std::string& text) {
  std::string s = Lower(text);
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) i++;
  auto n = ParseUint(std::string_view(s).substr(0, i));
  if (!n) return std::nullopt;
  std::string unit = s.substr(i);
  uint64_t mult;
  if (unit == "ms") mult = 1;
  else if (unit == "s" || unit.empty()) mult = 1000;  // a bare number is seconds
  else if (unit == "m") mult = 60 * 1000;
  else if (unit == "h") mult = 3600 * 1000;
  else return std::nullopt;
  if (*n > (uint64_t{1} << 40) / mult) return std::nullopt;
  return std::chrono::milliseconds(*n * mult);
}

namespace {

// One <number><unit> of a Go duration: the nanoseconds of its unit, and its
// length in bytes ("µs" is two bytes of UTF-8 and an "s"). 0 if none.
uint64_t DurationUnit(std::string_view s, size_t* len) {
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"ns", 1}, {"us", 1000}, {"\xc2\xb5s", 1000}, {"\xce\xbcs", 1000},  // µ (micro sign) and μ (Greek mu)
      {"ms", 1000000}, {"s", 1000000000}, {"m", 60000000000}, {"h", 3600000000000}};
  for (auto [name, ns] : kUnits) {
    if (s.substr(0, name.size()) == name) {
      *len = name.size();
      return ns;
    }
  }
  return 0;
}

// Go's time.ParseDuration spelling without a sign ("500us", "500µs",
// "1.5ms", "1ms500us"), in nanoseconds; nullopt when malformed or above an
// hour.
std::optional<uint64_t> ParseGoDuration(std::string_view s) {
  constexpr uint64_t kLimit = 3600000000000;
  if (s.empty()) return std::nullopt;
  unsigned __int128 total = 0;
  while (!s.empty()) {
    size_t i = 0;
    uint64_t whole = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      whole = whole * 10 + static_cast<uint64_t>(s[i] - '0');
      if (whole > kLimit) return std::nullopt;
      i++;
    }
    bool digits = i > 0;
    uint64_t frac = 0, scale = 1;
    if (i < s.size() && s[i] == '.') {
      i++;
      for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); i++) {
        digits = true;
        if (scale < 1000000000000000000ull) {  // digits past 18 are below a nanosecond of any unit
          frac = frac * 10 + static_cast<uint64_t>(s[i] - '0');
          scale *= 10;
        }
      }
    }
    if (!digits) return std::nullopt;
    size_t len = 0;
    uint64_t unit = DurationUnit(s.substr(i), &len);
    if (unit == 0) return std::nullopt;
    total += static_cast<unsigned __int128>(whole) * unit + static_cast<unsigned __int128>(frac) * unit / scale;
    if (total > kLimit) return std::nullopt;
    s.remove_prefix(i + len);
  }
  return static_cast<uint64_t>(total);
}

}  // namespace

std::optional<std::chrono::microseconds> ParseBatchTimeout(const std::string& text) {
  std::string bt = Lower(text);
  uint64_t ns = 0;
  if (auto secs = ParseUint(bt)) {  // a bare number is seconds, as in every rolisd duration
    if (*secs > 3600) return std::nullopt;
    ns = *secs * 1000000000;
  } else if (auto d = ParseGoDuration(bt)) {
    ns = *d;
  } else {
    return std::nullopt;
  }
  // The range is checked on the exact value (as the API server checks it),
  // then rounded to the microsecond (as the operator rounds it).
  if (ns < static_cast<uint64_t>(std::chrono::nanoseconds(kMinBatchTimeout).count()) ||
      ns > static_cast<uint64_t>(std::chrono::nanoseconds(kMaxBatchTimeout).count())) {
    return std::nullopt;
  }
  return std::chrono::microseconds((ns + 500) / 1000);
}

bool ValidHostPort(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string host = address.substr(0, colon);
  auto port = ParseUint(std::string_view(address).substr(colon + 1));
  if (!port || *port > 65535) return false;
  if (host.front() == '[') return host.back() == ']' && host.size() > 2;
  if (host.find(':') != std::string::npos) return false;  // v6 must be bracketed
  for (char c : host) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) return false;
  }
  return true;
}

std::optional<std::vector<Peer>> ParsePeers(const std::string& text, std::string* error) {
  std::vector<Peer> peers;
  if (text.empty()) return peers;
  std::set<uint32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      *error = fmt::format("peer '{}': want ID=HOST:PORT", item);
      return std::nullopt;
    }
    auto id = ParseUint(std::string_view(item).substr(0, eq));
    if (!id || *id == 0 || *id > 0xffffffffu) {
      *error = fmt::format("peer '{}': ID must be a positive integer", item);
      return std::nullopt;
    }
    std::string addr = item.substr(eq + 1);
    if (!ValidHostPort(addr)) {
      *error = fmt::format("peer '{}': address must be HOST:PORT", item);
      return std::nullopt;
    }
    if (!ids.insert(static_cast<uint32_t>(*id)).second) {
      *error = fmt::format("peer ID {} given twice", *id);
      return std::nullopt;
    }
    peers.push_back({static_cast<uint32_t>(*id), addr});
  }
  std::sort(peers.begin(), peers.end(), [](const Peer& a, const Peer& b) { return a.id < b.id; });
  return peers;
}

const char* DurabilityName(Durability d) { return d == Durability::kDisk ? "disk" : "memory"; }

std::string ServerConfig::ClientAddress() const {
  if (!advertise_address.empty()) return advertise_address;
  return listen;
}

std::string ServerConfig::Summary() const {
  std::string peer_list;
  for (const Peer& p : peers) {
    if (!peer_list.empty()) peer_list += ",";
    peer_list += fmt::format("{}={}", p.id, p.address);
  }
  std::string table_list;
  for (const auto& t : tables) {
    if (!table_list.empty()) table_list += ",";
    table_list += t;
  }
  return fmt::format(
      "listen={} admin_listen={} metrics_listen={} advertise_address={} id={} peers=[{}] election={} decider={} "
      "durability={} data_dir={} checkpoint_every={} "
      "worker_threads={} replication_streams={} tables=[{}] epoch_period={}ms huge_pages={} prefault_memory={} "
      "txn_idle_timeout={} max_txn_idle_timeout={} "
      "execute_retries={} max_execute_retries={} max_key_bytes={} max_value_bytes={} max_ops_per_txn={} "
      "max_open_txns={} max_scan_limit={} max_message_bytes={} max_stream_inflight={} memory_limit={} memory_high_watermark={}% tls={} mtls={} "
      "tls_authorize={} tls_trust_domain={} metrics_tls={} tls_accept_plaintext={} tls_refresh_interval={}s shutdown_grace={} "
      "log_format={} log_level={}",
      listen, admin_listen, metrics_listen, ClientAddress(), id, peer_list,
      election == Election::kNone ? "none" : "builtin",
      decider == Decider::kOperator ? "operator" : "control-stream", DurabilityName(durability),
      data_dir.empty() ? "-" : data_dir, FormatBytes(checkpoint_every),
      worker_threads, replication_streams, table_list, epoch_period_ms,
      huge_pages ? "on" : "off", FormatBytes(prefault_memory),
      FormatDuration(txn_idle_timeout), FormatDuration(max_txn_idle_timeout), execute_retries,
      max_execute_retries, max_key_bytes, max_value_bytes, max_ops_per_txn, max_open_txns, max_scan_limit,
      FormatBytes(max_message_bytes), max_stream_inflight,
      !memory_limit ? std::string("cgroup") : *memory_limit == 0 ? std::string("none") : FormatBytes(*memory_limit),
      memory_high_watermark, tls_cert.empty() ? "off" : "on",
      tls_ca.empty() ? "off" : "on", tls_authorize ? "on" : "off", tls_trust_domain.empty() ? "any" : tls_trust_domain,
      metrics_tls ? "on" : "off", tls_accept_plaintext ? "on" : "off", tls_refresh_interval.count(), FormatDuration(shutdown_grace),
      log_format == LogFormat::kJson ? "json" : "text", log_level);
}

ParseResult ParseConfig(int argc, const char* const* argv) {
  ParseResult result;
  ServerConfig& c = result.config;
  CLI::App app{
      "rolisd: the Rolis database server. A replicated, multi-core, in-memory transactional "
      "key-value store (Silo OCC engine). With no --peers it runs a single unreplicated node "
      "(role STANDALONE) that serves reads and writes.\n\n"
      "Every flag can also be set through the environment variable shown next to it; a flag on "
      "the command line wins. Durations take a unit (500ms, 30s, 10m; a bare number is seconds); "
      "sizes take an optional unit (B, KiB, MiB, GiB; K/KB and M/MB also mean 1024-based units).",
      "rolisd"};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.get_formatter()->column_width(40);

  std::string txn_idle = "30s", max_txn_idle = "10m", shutdown_grace = "10s", tls_refresh = "60s";
  std::string max_key = "1024", max_value = "64KiB", max_msg = "4MiB", prefault = "0";
  std::string memory_limit;  // empty: the cgroup's limit
  std::string peers, tables = "kv", election = "none", decider = "control-stream", log_format = "text";
  std::string batch_timeout = "1ms", election_timeout = "1500ms";
  std::string durability, checkpoint_every = "256MiB";
  std::string tls_authorize = "auto", metrics_tls = "auto";

  // Network.
  app.add_option("--listen", c.listen, "Client API address (rolis.v1.Rolis and grpc.health.v1)")
      ->envname("ROLISD_LISTEN")->capture_default_str()->group("Network");
  app.add_option("--admin-listen", c.admin_listen, "Admin API address (rolis.v1.Admin and grpc.health.v1)")
      ->envname("ROLISD_ADMIN_LISTEN")->capture_default_str()->group("Network");
  app.add_option("--metrics-listen", c.metrics_listen, "HTTP address of /metrics, /healthz and /readyz")
      ->envname("ROLISD_METRICS_LISTEN")->capture_default_str()->group("Network");
  app.add_option("--advertise-address", c.advertise_address,
                 "Client address of this node given to clients in leader redirects (default: --listen)")
      ->envname("ROLISD_ADVERTISE_ADDRESS")->group("Network");

  // Membership.
  app.add_option("--id", c.id, "This member's ID in --peers (required with --peers)")
      ->envname("ROLISD_ID")->group("Replication");
  app.add_option("--peers", peers,
                 "Members as ID=HOST:PORT,... (replication addresses, this node included). Empty: "
                 "standalone node")
      ->envname("ROLISD_PEERS")->group("Replication");
  app.add_option("--election", election, "Leader election: none (driven by the operator or rolisctl) or builtin")
      ->envname("ROLISD_ELECTION")->capture_default_str()->check(CLI::IsMember({"none", "builtin"}))
      ->group("Replication");
  app.add_option("--decider", decider,
                 "Who decides epoch records: control-stream (DecideEpoch: rolisctl failover, --election=builtin) or "
                 "operator (its compare-and-set in Kubernetes); a member refuses the other")
      ->envname("ROLISD_DECIDER")->capture_default_str()->check(CLI::IsMember({"control-stream", "operator"}))
      ->group("Replication");
  app.add_option("--election-timeout", election_timeout,
                 "--election=builtin: a follower that hears no open leader this long runs an election")
      ->envname("ROLISD_ELECTION_TIMEOUT")->capture_default_str()->group("Replication");
  app.add_option("--batch-size", c.batch_size, "A replication batch closes at this many transactions ...")
      ->envname("ROLISD_BATCH_SIZE")->capture_default_str()->group("Replication");
  app.add_option("--batch-timeout", batch_timeout,
                 "... or this long after its first one (e.g. 500us, 1ms); an idle stream sends an empty batch "
                 "as often so that the watermark moves")
      ->envname("ROLISD_BATCH_TIMEOUT")->capture_default_str()->group("Replication");
  app.add_option("--max-inflight-batches", c.max_inflight_batches,
                 "Per stream: batches sent beyond the majority-accepted prefix before commits wait (flow control)")
      ->envname("ROLISD_MAX_INFLIGHT_BATCHES")->capture_default_str()->group("Replication");
  app.add_option("--accept-stream-port", c.accept_stream_port,
                 "TCP port of this member's accept stream, the leader's accepts framed apart from gRPC (cheaper "
                 "per message); 0 = any free port (peers learn it), -1 = none: accepts go on the replication port")
      ->envname("ROLISD_ACCEPT_STREAM_PORT")->capture_default_str()->check(CLI::Range(-1, 65535))
      ->group("Replication");
  app.add_option("--test-drop-peers-file", c.test_drop_peers_file,
                 "For tests only: drop replication traffic with the member ids listed in this file (a partition)")
      ->envname("ROLISD_TEST_DROP_PEERS_FILE")->group("Replication");

  // Engine.
  app.add_option("--data-dir", c.data_dir,
                 "Directory of this member's durable state (Paxos promises and votes, the replicated log, "
                 "checkpoints); a member restarted with it keeps everything it acknowledged")
      ->envname("ROLISD_DATA_DIR")->group("Durability");
  app.add_option("--durability", durability,
                 "disk (acknowledge only what is on a majority's disk; needs --data-dir, the default with it) or "
                 "memory (the default without --data-dir)")
      ->envname("ROLISD_DURABILITY")->check(CLI::IsMember({"disk", "memory"}))->group("Durability");
  app.add_option("--checkpoint-every", checkpoint_every,
                 "A member checkpoints once its log grew this much since the last checkpoint (e.g. 256MiB; at "
                 "least 1MiB); the log behind the checkpoint is then removed")
      ->envname("ROLISD_CHECKPOINT_EVERY")->capture_default_str()->group("Durability");

  app.add_option("--worker-threads", c.worker_threads,
                 "Engine workers (worker i commits on replication stream i); 0 = number of CPUs")
      ->envname("ROLISD_WORKER_THREADS")->capture_default_str()->group("Engine");
  app.add_option("--replication-streams", c.replication_streams,
                 "Replication streams, the same on every member of a cluster; at least --worker-threads "
                 "(worker i commits on stream i, a stream without a worker only sends heartbeats); "
                 "0 = --worker-threads")
      ->envname("ROLISD_REPLICATION_STREAMS")->capture_default_str()->group("Engine");
  app.add_option("--tables", tables,
                 "Tables, comma-separated, created at startup; \"kv\" (the default table) is always present")
      ->envname("ROLISD_TABLES")->capture_default_str()->group("Engine");
  app.add_option("--epoch-period-ms", c.epoch_period_ms, "Engine snapshot epoch period in milliseconds")
      ->envname("ROLISD_EPOCH_PERIOD_MS")->capture_default_str()->group("Engine");
  app.add_option("--huge-pages", c.huge_pages,
                 "Back the engine's memory with transparent huge pages (true/false): faster lookups on large "
                 "data sets, but allocation churn (network buffers) then zeroes 2 MiB pages; see "
                 "docs/operations.md")
      ->envname("ROLISD_HUGE_PAGES")->capture_default_str()->group("Engine");
  app.add_option("--prefault-memory", prefault,
                 "Memory to fault in at start and keep for the engine (e.g. 4GiB; rounded up to 64MiB): no page "
                 "faults while the data grows into it; it counts toward the memory limit from the start. 0 = none")
      ->envname("ROLISD_PREFAULT_MEMORY")->capture_default_str()->group("Engine");

  // Transactions.
  app.add_option("--txn-idle-timeout", txn_idle,
                 "Default idle timeout of an interactive transaction; after it the transaction is aborted")
      ->envname("ROLISD_TXN_IDLE_TIMEOUT")->capture_default_str()->group("Transactions");
  app.add_option("--max-txn-idle-timeout", max_txn_idle, "Cap on an idle timeout a client asks for in Begin")
      ->envname("ROLISD_MAX_TXN_IDLE_TIMEOUT")->capture_default_str()->group("Transactions");
  app.add_option("--execute-retries", c.execute_retries,
                 "Server-side retries of a one-shot transaction on a conflict when the request's max_retries is 0")
      ->envname("ROLISD_EXECUTE_RETRIES")->capture_default_str()->group("Transactions");
  app.add_option("--max-execute-retries", c.max_execute_retries, "Cap on a request's max_retries")
      ->envname("ROLISD_MAX_EXECUTE_RETRIES")->capture_default_str()->group("Transactions");

  // Limits.
  app.add_option("--max-key-bytes", max_key, "Largest key (INVALID_ARGUMENT beyond)")
      ->envname("ROLISD_MAX_KEY_BYTES")->capture_default_str()->group("Limits");
  app.add_option("--max-value-bytes", max_value, "Largest value (INVALID_ARGUMENT beyond)")
      ->envname("ROLISD_MAX_VALUE_BYTES")->capture_default_str()->group("Limits");
  app.add_option("--max-ops-per-txn", c.max_ops_per_txn,
                 "Most operations in one transaction (Execute: INVALID_ARGUMENT; interactive: RESOURCE_EXHAUSTED)")
      ->envname("ROLISD_MAX_OPS_PER_TXN")->capture_default_str()->group("Limits");
  app.add_option("--max-open-txns", c.max_open_txns, "Most open interactive transactions (RESOURCE_EXHAUSTED beyond)")
      ->envname("ROLISD_MAX_OPEN_TXNS")->capture_default_str()->group("Limits");
  app.add_option("--max-scan-limit", c.max_scan_limit, "Most keys one scan returns (larger limits are capped)")
      ->envname("ROLISD_MAX_SCAN_LIMIT")->capture_default_str()->group("Limits");
  app.add_option("--max-message-bytes", max_msg,
                 "Largest gRPC message received or sent; scan results are cut to fit")
      ->envname("ROLISD_MAX_MESSAGE_BYTES")->capture_default_str()->group("Limits");
  app.add_option("--memory-limit", memory_limit,
                 "Memory this member may use (e.g. 1GiB): writes are refused (RESOURCE_EXHAUSTED) above "
                 "--memory-high-watermark percent of it. Default: the memory cgroup's limit, if any; 0 = none")
      ->envname("ROLISD_MEMORY_LIMIT")->group("Limits");
  app.add_option("--memory-high-watermark", c.memory_high_watermark,
                 "Percent of --memory-limit at which writes are refused (10..100); accepted again 5 points below")
      ->envname("ROLISD_MEMORY_HIGH_WATERMARK")->capture_default_str()->group("Limits");
  app.add_option("--max-stream-inflight", c.max_stream_inflight,
                 "Pending responses per ExecuteStream/ExecuteBatchStream before the server stops reading it (flow "
                 "control); also the most transactions in one ExecuteBatchStream message")
      ->envname("ROLISD_MAX_STREAM_INFLIGHT")->capture_default_str()->group("Limits");

  // TLS.
  app.add_option("--tls-cert", c.tls_cert, "PEM certificate chain of the client, admin and replication ports (enables TLS)")
      ->envname("ROLISD_TLS_CERT")->group("TLS");
  app.add_option("--tls-key", c.tls_key, "PEM private key of --tls-cert")
      ->envname("ROLISD_TLS_KEY")->group("TLS");
  app.add_option("--tls-ca", c.tls_ca, "PEM CA bundle; when given, clients and peers must present a certificate it signed (mTLS); "
                 "required with --peers and --tls-cert")
      ->envname("ROLISD_TLS_CA")->group("TLS");
  app.add_option("--tls-refresh-interval", tls_refresh, "How often the TLS files are checked for changes")
      ->envname("ROLISD_TLS_REFRESH_INTERVAL")->capture_default_str()->group("TLS");
  app.add_option("--tls-authorize", tls_authorize,
                 "Authorize each call by the kind of the caller's certificate (member, operator, client, "
                 "client-readonly; a spiffe:// URI SAN): on, off, or auto (on when --tls-ca is given)")
      ->envname("ROLISD_TLS_AUTHORIZE")->capture_default_str()->check(CLI::IsMember({"auto", "on", "off"}))
      ->group("TLS");
  app.add_option("--tls-trust-domain", c.tls_trust_domain,
                 "Trust domain of the certificates' identities (rolis.<namespace>.<cluster>); when set, an "
                 "identity of another trust domain is refused")
      ->envname("ROLISD_TLS_TRUST_DOMAIN")->group("TLS");
  app.add_option("--metrics-tls", metrics_tls,
                 "Serve --metrics-listen over HTTPS with --tls-cert (no client certificate asked for): on, off, or "
                 "auto (on when --tls-cert is given)")
      ->envname("ROLISD_METRICS_TLS")->capture_default_str()->check(CLI::IsMember({"auto", "on", "off"}))
      ->group("TLS");
  app.add_flag("--tls-accept-plaintext", c.tls_accept_plaintext,
               "While a running cluster moves between plaintext and TLS: every port also takes plaintext "
               "connections (callers without identity, allowed what --tls-authorize=off allows) and peers are "
               "dialed in TLS first, in plaintext when that fails; needs --tls-cert, --tls-key and --tls-ca")
      ->envname("ROLISD_TLS_ACCEPT_PLAINTEXT")->group("TLS");

  // Process.
  app.add_option("--shutdown-grace", shutdown_grace,
                 "On SIGTERM/SIGINT: how long replies waiting for replication, then in-flight calls, get to finish "
                 "(after it, a committed but unreplicated transaction's reply is UNKNOWN, outcome unknown)")
      ->envname("ROLISD_SHUTDOWN_GRACE")->capture_default_str()->group("Process");
  app.add_option("--log-format", log_format, "Log format: text or json (one object a line)")
      ->envname("ROLISD_LOG_FORMAT")->capture_default_str()->check(CLI::IsMember({"text", "json"}))
      ->group("Process");
  app.add_option("--log-level", c.log_level, "Log level: trace, debug, info, warn, error")
      ->envname("ROLISD_LOG_LEVEL")->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))->group("Process");

  auto fail = [&](std::string msg) {
    result.kind = ParseResult::Kind::kError;
    result.exit_code = 2;
    result.message = std::move(msg);
    return result;
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    result.kind = ParseResult::Kind::kHelp;
    result.message = app.help();
    return result;
  } catch (const CLI::ParseError& e) {
    return fail(e.what());
  }

  // Durations and sizes.
  struct {
    const char* flag;
    const std::string* text;
    std::chrono::milliseconds* out;
    std::chrono::milliseconds min;
  } durations[] = {
      {"--txn-idle-timeout", &txn_idle, &c.txn_idle_timeout, std::chrono::milliseconds(1)},
      {"--max-txn-idle-timeout", &max_txn_idle, &c.max_txn_idle_timeout, std::chrono::milliseconds(1)},
      {"--shutdown-grace", &shutdown_grace, &c.shutdown_grace, std::chrono::milliseconds(0)},
  };
  for (auto& d : durations) {
    auto v = ParseDuration(*d.text);
    if (!v) return fail(fmt::format("{}: '{}' is not a duration (e.g. 500ms, 30s, 10m)", d.flag, *d.text));
    if (*v < d.min) return fail(fmt::format("{}: must be at least {}ms", d.flag, d.min.count()));
    *d.out = *v;
  }
  auto refresh = ParseDuration(tls_refresh);
  if (!refresh || refresh->count() < 1000) return fail("--tls-refresh-interval: want a duration of at least 1s");
  c.tls_refresh_interval = std::chrono::duration_cast<std::chrono::seconds>(*refresh);

  struct {
    const char* flag;
    const std::string* text;
    size_t* out;
  } sizes[] = {{"--max-key-bytes", &max_key, &c.max_key_bytes},
               {"--max-value-bytes", &max_value, &c.max_value_bytes},
               {"--max-message-bytes", &max_msg, &c.max_message_bytes},
               {"--prefault-memory", &prefault, &c.prefault_memory}};
  for (auto& s : sizes) {
    auto v = ParseByteSize(*s.text);
    if (!v) return fail(fmt::format("{}: '{}' is not a size (e.g. 1024, 64KiB, 4MiB)", s.flag, *s.text));
    *s.out = *v;
  }

  if (!memory_limit.empty()) {
    auto v = ParseByteSize(memory_limit);
    if (!v) return fail(fmt::format("--memory-limit: '{}' is not a size (e.g. 512MiB, 4GiB; 0 = none)", memory_limit));
    c.memory_limit = *v;
  }
  if (c.memory_high_watermark < 10 || c.memory_high_watermark > 100) {
    return fail(fmt::format("--memory-high-watermark: {} is not a percentage in 10..100", c.memory_high_watermark));
  }

  // Addresses.
  for (auto [flag, addr] : {std::pair{"--listen", &c.listen}, std::pair{"--admin-listen", &c.admin_listen},
                            std::pair{"--metrics-listen", &c.metrics_listen}}) {
    if (!ValidHostPort(*addr)) return fail(fmt::format("{}: '{}' is not HOST:PORT", flag, *addr));
  }
  if (!c.advertise_address.empty() && !ValidHostPort(c.advertise_address)) {
    return fail(fmt::format("--advertise-address: '{}' is not HOST:PORT", c.advertise_address));
  }

  // Membership.
  std::string err;
  auto parsed = ParsePeers(peers, &err);
  if (!parsed) return fail("--peers: " + err);
  c.peers = std::move(*parsed);
  c.election = election == "builtin" ? Election::kBuiltin : Election::kNone;
  c.decider = decider == "operator" ? Decider::kOperator : Decider::kControlStream;
  if (c.election == Election::kBuiltin && c.decider == Decider::kOperator) {
    return fail("--election=builtin decides on the control stream: it needs --decider=control-stream");
  }
  {
    std::optional<std::chrono::microseconds> us = ParseBatchTimeout(batch_timeout);
    if (!us) {
      return fail(fmt::format("--batch-timeout: '{}' is not a duration of {}us..{}s", batch_timeout,
                              kMinBatchTimeout.count(), kMaxBatchTimeout.count() / 1000000));
    }
    c.batch_timeout = *us;
    auto et = ParseDuration(election_timeout);
    if (!et || et->count() < 50) return fail("--election-timeout: want a duration of at least 50ms");
    c.election_timeout = *et;
  }
  if (c.batch_size == 0 || c.batch_size > 100000) return fail("--batch-size: want 1..100000");
  if (c.max_inflight_batches < 2 || c.max_inflight_batches > 65536) return fail("--max-inflight-batches: want 2..65536");
  if (c.replicated()) {
    if (c.id == 0) return fail("--id: required with --peers (this member's ID)");
    bool found = std::any_of(c.peers.begin(), c.peers.end(), [&](const Peer& p) { return p.id == c.id; });
    if (!found) return fail(fmt::format("--id: {} is not one of --peers", c.id));
  } else if (c.election == Election::kBuiltin) {
    return fail("--election=builtin needs --peers");
  }

  // Durability.
  if (durability.empty()) durability = c.data_dir.empty() ? "memory" : "disk";
  c.durability = durability == "disk" ? Durability::kDisk : Durability::kMemory;
  if (c.durability == Durability::kDisk && c.data_dir.empty()) {
    return fail("--durability=disk needs --data-dir (where the member keeps its state)");
  }
  {
    auto every = ParseByteSize(checkpoint_every);
    if (!every) return fail(fmt::format("--checkpoint-every: '{}' is not a size (e.g. 64MiB, 1GiB)", checkpoint_every));
    if (*every < (size_t{1} << 20)) return fail("--checkpoint-every: want at least 1MiB");
    c.checkpoint_every = *every;
  }
  if (c.durability == Durability::kDisk && !c.replicated()) {
    return fail("--data-dir: durability needs --peers (a standalone node keeps its data in memory only; "
                "give --durability=memory to run it so)");
  }

  // Tables.
  c.tables.clear();
  c.tables.push_back("kv");
  std::stringstream tin(tables);
  std::string t;
  while (std::getline(tin, t, ',')) {
    if (t.empty()) continue;
    if (t.size() > 64) return fail(fmt::format("--tables: name '{}' is longer than 64 bytes", t));
    for (char ch : t) {
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.')) {
        return fail(fmt::format("--tables: name '{}' may hold only letters, digits, '_', '-' and '.'", t));
      }
    }
    if (IsBenchmarkTableName(t)) {
      return fail(fmt::format("--tables: name '{}' is reserved: tables named '{}...' belong to the benchmark "
                              "procedures (docs/client.md, \"Procedures\")", t, kBenchmarkTablePrefix));
    }
    if (std::find(c.tables.begin(), c.tables.end(), t) == c.tables.end()) c.tables.push_back(t);
  }
  if (c.tables.size() > 1024) return fail("--tables: at most 1024 tables");

  // Engine and limits.
  if (c.worker_threads == 0) c.worker_threads = std::max(1u, std::thread::hardware_concurrency());
  if (c.worker_threads > 64) return fail("--worker-threads: at most 64");
  if (c.replication_streams == 0) c.replication_streams = c.worker_threads;
  if (c.replication_streams > 64) return fail("--replication-streams: at most 64");
  if (c.replication_streams < c.worker_threads) {
    return fail(fmt::format("--replication-streams={} is fewer than --worker-threads={}: each worker needs a "
                            "stream of its own; raise --replication-streams (the same on every member) or lower "
                            "--worker-threads",
                            c.replication_streams, c.worker_threads));
  }
  if (c.epoch_period_ms == 0 || c.epoch_period_ms > 10000) return fail("--epoch-period-ms: want 1..10000");
  if (c.max_key_bytes == 0 || c.max_key_bytes > 1024 * 1024) return fail("--max-key-bytes: want 1B..1MiB");
  if (c.max_value_bytes > 64 * 1024 * 1024) return fail("--max-value-bytes: at most 64MiB");
  if (c.max_message_bytes < 64 * 1024 || c.max_message_bytes > 1024ull * 1024 * 1024) {
    return fail("--max-message-bytes: want 64KiB..1GiB");
  }
  if (c.max_key_bytes + c.max_value_bytes + 1024 > c.max_message_bytes) {
    return fail(fmt::format("--max-message-bytes ({}) must exceed --max-key-bytes + --max-value-bytes + 1KiB",
                            c.max_message_bytes));
  }
  if (c.max_ops_per_txn == 0) return fail("--max-ops-per-txn: must be positive");
  if (c.max_open_txns == 0) return fail("--max-open-txns: must be positive");
  if (c.max_scan_limit == 0) return fail("--max-scan-limit: must be positive");
  if (c.max_stream_inflight == 0) return fail("--max-stream-inflight: must be positive");
  if (c.max_execute_retries > 1000) return fail("--max-execute-retries: at most 1000");
  if (c.execute_retries > c.max_execute_retries) return fail("--execute-retries: above --max-execute-retries");
  if (c.txn_idle_timeout > c.max_txn_idle_timeout) return fail("--txn-idle-timeout: above --max-txn-idle-timeout");

  // TLS.
  if (c.tls_cert.empty() != c.tls_key.empty()) return fail("--tls-cert and --tls-key go together");
  if (!c.tls_ca.empty() && c.tls_cert.empty()) return fail("--tls-ca needs --tls-cert and --tls-key");
  if (c.replicated() && !c.tls_cert.empty() && c.tls_ca.empty()) {
    return fail("with --peers, --tls-cert needs --tls-ca: members authenticate each other on the replication port "
                "(mutual TLS)");
  }
  c.tls_authorize = tls_authorize == "on" || (tls_authorize == "auto" && !c.tls_ca.empty());
  if (c.tls_authorize && c.tls_ca.empty()) {
    return fail("--tls-authorize=on needs --tls-ca: identities come from verified client certificates");
  }
  for (char& ch : c.tls_trust_domain) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!c.tls_trust_domain.empty() && (c.tls_trust_domain.find_first_of("/:") != std::string::npos)) {
    return fail("--tls-trust-domain: want a name such as rolis.<namespace>.<cluster>, without scheme or path");
  }
  if (!c.tls_trust_domain.empty() && !c.tls_authorize) {
    return fail("--tls-trust-domain needs --tls-authorize=on");
  }
  c.metrics_tls = metrics_tls == "on" || (metrics_tls == "auto" && !c.tls_cert.empty());
  if (c.metrics_tls && c.tls_cert.empty()) return fail("--metrics-tls=on needs --tls-cert and --tls-key");
  if (c.tls_accept_plaintext && c.tls_ca.empty()) {
    return fail("--tls-accept-plaintext needs --tls-cert, --tls-key and --tls-ca");
  }

  c.log_format = log_format == "json" ? LogFormat::kJson : LogFormat::kText;
  return result;
}

}  // namespace rolis::server
