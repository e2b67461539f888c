#include "server/memory_guard.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fstream>

#include "rolis/thread_name.h"
#include "server/logging.h"

namespace rolis::server {
namespace {

uint64_t Percent(uint64_t limit, uint32_t percent) {
  return static_cast<uint64_t>(static_cast<long double>(limit) * percent / 100);
}

double MiB(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

// A cgroup limit file: a number of bytes, or "max". Values from 2^60 up are
// what cgroup v1 reports for "no limit" (rounded down to the page size).
std::optional<uint64_t> ReadLimitFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text;
  in >> text;
  if (text.empty() || text == "max") return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v == 0 || v >= (uint64_t{1} << 60)) return std::nullopt;
  return v;
}

}  // namespace

MemoryGuard::MemoryGuard(uint64_t limit, uint32_t high_percent, Reader read)
    : limit_(limit),
      high_(Percent(limit, high_percent)),
      low_(high_percent > kHysteresisPercent ? Percent(limit, high_percent - kHysteresisPercent) : 0),
      read_(std::move(read)) {}

MemoryGuard::~MemoryGuard() { Stop(); }

int MemoryGuard::Sample() {
  if (limit_ == 0) return 0;
  uint64_t now = read_();
  resident_.store(now, std::memory_order_relaxed);
  bool was = pressure_.load(std::memory_order_relaxed);
  if (now == 0) return 0;  // unreadable: keep the state
  if (!was && now >= high_) {
    pressure_.store(true, std::memory_order_relaxed);
    return 1;
  }
  if (was && now < low_) {
    pressure_.store(false, std::memory_order_relaxed);
    return -1;
  }
  return 0;
}

std::string MemoryGuard::RefusalMessage() const {
  return fmt::format(
      "memory nearly full ({:.0f} MiB of {:.0f} MiB limit): writes refused until it drops below {:.0f} MiB; "
      "raise resources.limits.memory (--memory-limit) or delete data",
      MiB(resident()), MiB(limit_), MiB(low_));
}

void MemoryGuard::Start(std::chrono::milliseconds period) {
  if (limit_ == 0 || thread_.joinable()) return;
  Sample();
  thread_ = std::thread([this, period] { Loop(period); });
}

void MemoryGuard::Stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MemoryGuard::Loop(std::chrono::milliseconds period) {
  NameThisThread("rolis-memory");
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period);
    if (stop_) break;
    int changed = Sample();
    // The 5-point hysteresis keeps transitions rare; a workload that still
    // flaps gets one warning a minute (LogErrorClass counts the rest).
    if (changed > 0) {
      LogErrorClass("memory_pressure", RefusalMessage());
    } else if (changed < 0) {
      spdlog::info("memory pressure ended: {:.0f} MiB of {:.0f} MiB limit; writes accepted again",
                   MiB(resident()), MiB(limit_));
    }
  }
}

uint64_t ReadResidentBytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

std::optional<uint64_t> CgroupMemoryLimit(const std::string& root) {
  if (auto v2 = ReadLimitFile(root + "/memory.max")) return v2;
  return ReadLimitFile(root + "/memory/memory.limit_in_bytes");
}

}  // namespace rolis::server
