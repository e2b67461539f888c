// Configuration of rolisd: every setting is a flag with an environment
// variable (ROLISD_<FLAG>) and a default. ParseConfig is pure (no logging, no
// exit) so tests can drive it; rolisd's main prints the help or error.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rolis/byte_size.h"

namespace rolis::server {

struct Peer {
  uint32_t id = 0;
  std::string address;  // replication address host:port
};

enum class LogFormat { kText, kJson };
enum class Election { kNone, kBuiltin };
// Who decides the epoch records (docs/replication.md, "One decider per
// cluster"): the members' control stream (rolisctl, the built-in election)
// or the operator's compare-and-set. A member refuses the other.
enum class Decider { kControlStream, kOperator };

// A replication batch closes at this many transactions or after
// --batch-timeout, whichever comes first. Each batch is a message to every
// follower, its reply and a few thread wake-ups on both sides (~37 µs of CPU
// per message and follower; docs/benchmarks.md, "Batch size 200, batch
// timeout 1 ms"): at 50, the followers spent twice as much CPU on
// messages as on replay at one worker's YCSB++ peak. 200
// moves the count close only above 200K commits per second per stream;
// below that the timeout closes batches, so the commit latency it adds stays
// under --batch-timeout.
inline constexpr uint32_t kDefaultBatchSize = 200;

enum class Durability { kMemory, kDisk };
const char* DurabilityName(Durability d);

struct ServerConfig {
  // Network.
  std::string listen = "0.0.0.0:7070";          // client API (rolis.v1.Rolis + health)
  std::string admin_listen = "0.0.0.0:7071";    // admin API (rolis.v1.Admin + health)
  std::string metrics_listen = "0.0.0.0:7072";  // HTTP /metrics /healthz /readyz
  std::string advertise_address;                // client address others redirect to; default: listen

  // Membership: this member's id among --peers, the members of the cluster
  // (with any, the member replicates: replicated()), and how a leader is
  // elected: by the operator or rolisctl (none) or by the members (builtin).
  uint32_t id = 0;
  std::vector<Peer> peers;
  Election election = Election::kNone;
  Decider decider = Decider::kControlStream;
  // Replication (docs/replication.md).
  uint32_t batch_size = kDefaultBatchSize;               // a batch closes at this many transactions ...
  std::chrono::microseconds batch_timeout{1000};         // ... or after this long
  uint32_t max_inflight_batches = 64;                    // per stream, beyond the majority-accepted prefix
  std::chrono::milliseconds election_timeout{1500};      // --election=builtin
  // The leader's accepts and their replies go on a framed TCP connection of
  // their own at this port (0: any free port, told to peers in Hello; -1:
  // none, gRPC's Replicate call carries them). docs/replication.md, "Transport".
  int accept_stream_port = 0;
  std::string test_drop_peers_file;                      // tests only: drop traffic with the ids listed there
  // Durability (docs/operations.md, "Durability"): with --data-dir a member
  // keeps its Paxos state, its log and checkpoints there (disk, the default
  // then); memory is the paper's mode (a member that restarts forgets).
  std::string data_dir;
  Durability durability = Durability::kMemory;
  // A member checkpoints once its log grew this much since the
  // last checkpoint; the log segments behind it are then removed.
  uint64_t checkpoint_every = uint64_t{256} << 20;

  // Engine.
  uint32_t worker_threads = 0;  // 0 before Finalize: number of CPUs
  // Replication streams: worker i commits on stream i, so at least
  // worker_threads; 0 before Finalize = worker_threads. Every member of a
  // cluster needs the same number, which is why it is its own setting: the
  // worker count may then differ between members (and change by restarts).
  uint32_t replication_streams = 0;
  std::vector<std::string> tables = {"kv"};
  uint32_t epoch_period_ms = 40;
  // Transparent huge pages for the allocator (Options::huge_pages): fewer
  // TLB misses on large data, but every fresh allocator segment is zeroed
  // 2 MiB at a time, which network buffers make frequent. Off by default:
  // docs/operations.md, "Huge pages".
  bool huge_pages = false;
  // Bytes of memory faulted in at start and kept by the allocator for good
  // (rolis/prefault.h): the engine then grows without page faults until it
  // is used up. 0 (the default): none. docs/operations.md, "Prefaulted memory".
  size_t prefault_memory = 0;

  // Transactions.
  std::chrono::milliseconds txn_idle_timeout{30000};
  std::chrono::milliseconds max_txn_idle_timeout{600000};
  uint32_t execute_retries = 5;      // server-side retries of a one-shot txn (request max_retries = 0)
  uint32_t max_execute_retries = 50; // cap on a request's max_retries

  // Limits.
  size_t max_key_bytes = 1024;
  size_t max_value_bytes = 64 * 1024;
  uint32_t max_ops_per_txn = 10000;
  uint32_t max_open_txns = 10000;
  uint32_t max_scan_limit = 10000;
  size_t max_message_bytes = 4 * 1024 * 1024;
  uint32_t max_stream_inflight = 1024;  // pending responses per ExecuteStream
  // Writes are refused while the resident memory is at or above
  // memory_high_watermark percent of memory_limit (docs/operations.md,
  // "Memory limit"). nullopt: the memory cgroup's limit, if any; 0: none.
  std::optional<uint64_t> memory_limit;
  uint32_t memory_high_watermark = 90;

  // TLS (client and admin ports). Plaintext when tls_cert is empty.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;  // when set: mutual TLS, client certificates required and verified
  std::chrono::seconds tls_refresh_interval{60};
  // Authorization by certificate identity (docs/operations.md, "Security
  // model"): on by default with --tls-ca (client certificates verified).
  bool tls_authorize = false;
  // When set: identities of another trust domain are refused.
  std::string tls_trust_domain;
  // /metrics, /healthz, /readyz over HTTPS with --tls-cert (no client
  // certificate asked for, so probes and scrapers need none).
  bool metrics_tls = false;
  // --tls-accept-plaintext: every port also takes plaintext connections
  // (tls_or_plaintext_port.h), whose callers have no identity and may call
  // what --tls-authorize=off allows; peers are dialed in TLS first, in
  // plaintext when that fails. Only while a running cluster moves between
  // plaintext and TLS (docs/operations.md, "Turning TLS on or off for a
  // running cluster").
  bool tls_accept_plaintext = false;

  // Process.
  std::chrono::milliseconds shutdown_grace{10000};
  LogFormat log_format = LogFormat::kText;
  std::string log_level = "info";

  bool replicated() const { return !peers.empty(); }
  // The client address of this node as given to clients in redirects.
  std::string ClientAddress() const;
  // One line with every setting, for the startup log.
  std::string Summary() const;
};

struct ParseResult {
  enum class Kind { kOk, kHelp, kError };
  Kind kind = Kind::kOk;
  int exit_code = 0;
  std::string message;  // help text or error
  ServerConfig config;
};

// Parses argv (and ROLISD_* environment variables; a flag wins over its
// variable), applies defaults and validates the combination.
ParseResult ParseConfig(int argc, const char* const* argv);

// Exposed for tests.
std::optional<std::chrono::milliseconds> ParseDuration(const std::string& text);
// --batch-timeout: the range and format shared with the RolisCluster CRD
// and the operator (docs/operator.md, "Batch timeout"; the same bounds are
// api/v1alpha1 MinBatchTimeout and MaxBatchTimeout, and
// api/v1alpha1/testdata/batch-timeouts.txt holds the cases both sides test).
inline constexpr std::chrono::microseconds kMinBatchTimeout{50};
inline constexpr std::chrono::microseconds kMaxBatchTimeout{1000000};
// Any spelling of Go's time.ParseDuration the API server admits ("500us",
// "500µs", "1.5ms", "1ms500us"), or a bare number of seconds, within
// kMinBatchTimeout..kMaxBatchTimeout; rounded to the microsecond. nullopt
// otherwise.
std::optional<std::chrono::microseconds> ParseBatchTimeout(const std::string& text);
using rolis::ParseByteSize;  // rolis/byte_size.h
// "1=host:port,2=host:port"; error text in *error when it returns nullopt.
std::optional<std::vector<Peer>> ParsePeers(const std::string& text, std::string* error);
// host:port with a numeric port 0..65535 (host may be [v6]).
bool ValidHostPort(const std::string& address);

}  // namespace rolis::server
