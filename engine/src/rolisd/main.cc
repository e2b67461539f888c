// rolisd: the Rolis database server. See docs/operations.md ("rolisd").
#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "paxos_replicator.h"
#include "rolis/db.h"
#include "rolis/prefault.h"
#include "server/config.h"
#include "server/logging.h"
#include "server/runtime.h"
#include "server/server.h"

int main(int argc, char** argv) {
  using rolis::server::ParseResult;
  ParseResult parsed = rolis::server::ParseConfig(argc, argv);
  if (parsed.kind == ParseResult::Kind::kHelp) {
    std::fputs(parsed.message.c_str(), stdout);
    return 0;
  }
  if (parsed.kind == ParseResult::Kind::kError) {
    std::fprintf(stderr, "rolisd: %s\nRun rolisd --help for the flags.\n", parsed.message.c_str());
    return parsed.exit_code;
  }
  const rolis::server::ServerConfig& config = parsed.config;
  rolis::server::TuneProcessRuntime();
  if (!rolis::server::SetupLogging(config.log_format, config.log_level)) {
    std::fprintf(stderr, "rolisd: bad --log-level %s\n", config.log_level.c_str());
    return 2;
  }

  // Signals are taken by sigwait below: block them before any thread starts
  // so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  spdlog::info("rolisd {} starting: {}", rolis::server::Version(), config.Summary());
  if (config.prefault_memory > 0) {
    // Before the engine opens, so that its first allocations come from it.
    const auto t0 = std::chrono::steady_clock::now();
    spdlog::info("prefaulting {} MiB for the engine (--prefault-memory; it counts toward the memory limit from now on)",
                 rolis::PrefaultSize(config.prefault_memory) >> 20);
    rolis::Status ps = rolis::PrefaultMemory(config.prefault_memory, config.huge_pages, [](size_t done, size_t total) {
      spdlog::info("prefaulted {} of {} MiB", done >> 20, total >> 20);
    });
    if (!ps.ok()) {
      spdlog::error("startup failed: --prefault-memory: {}", ps.message());
      return 1;
    }
    spdlog::info("prefaulted {} MiB in {:.1f} s", rolis::PrefaultedBytes() >> 20,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  rolis::server::RolisServer server(
      config, [](const rolis::Options& o) { return rolis::Database::Open(o); },
      [](const rolis::server::ServerConfig& c) { return rolis::replication::MakeReplicator(c); });
  rolis::Status s = server.Start();
  if (!s.ok()) {
    spdlog::error("startup failed: {}", s.message());
    server.Shutdown(std::chrono::milliseconds(0));
    return 1;
  }
  spdlog::info("serving: client {} (port {}), admin {} (port {}), metrics {} {} (port {}), role {}, {} workers",
               config.listen, server.client_port(), config.admin_listen, server.admin_port(),
               config.metrics_tls ? "https" : "http", config.metrics_listen,
               server.metrics_port(), config.replicated() ? "replicated member" : "standalone",
               server.node()->workers());

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("{} received: shutting down (grace {} ms)", strsignal(sig), config.shutdown_grace.count());
  server.Shutdown(config.shutdown_grace);
  spdlog::info("stopped: {} transactions committed", server.metrics()->commits());
  return 0;
}
