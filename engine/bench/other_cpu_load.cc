#include "other_cpu_load.h"

#include <immintrin.h>

#include <cstring>
#include <string>

#include "driver.h"
#include "rolis/thread_name.h"

namespace rolis::bench {

namespace {

constexpr uint64_t kRoundOps = uint64_t{1} << 16;

struct Named {
  OtherCpuLoadKind kind;
  const char* name;
};
constexpr Named kNames[] = {{OtherCpuLoadKind::kNone, "none"},
                            {OtherCpuLoadKind::kPause, "pause"},
                            {OtherCpuLoadKind::kStream, "stream"},
                            {OtherCpuLoadKind::kRandom, "random"}};

}  // namespace

bool ParseOtherCpuLoadKind(std::string_view name, OtherCpuLoadKind* out) {
  for (const Named& n : kNames) {
    if (name == n.name) {
      *out = n.kind;
      return true;
    }
  }
  return false;
}

const char* OtherCpuLoadName(OtherCpuLoadKind kind) {
  for (const Named& n : kNames) {
    if (n.kind == kind) return n.name;
  }
  return "none";
}

std::vector<std::string> OtherCpuLoadNames() {
  std::vector<std::string> names;
  for (const Named& n : kNames) names.emplace_back(n.name);
  return names;
}

OtherCpuLoad::OtherCpuLoad(OtherCpuLoadKind kind, const std::vector<int>& cpus, size_t buffer_bytes) : kind_(kind) {
  if (kind_ == OtherCpuLoadKind::kNone) return;
  if (kind_ == OtherCpuLoadKind::kStream || kind_ == OtherCpuLoadKind::kRandom) {
    buffer_bytes_ = buffer_bytes < 4096 ? 4096 : buffer_bytes;
    buffer_.reset(new char[buffer_bytes_]);
    std::memset(buffer_.get(), 1, buffer_bytes_);  // faulted in before the window, not during it
  }
  for (size_t i = 0; i < cpus.size(); ++i) {
    threads_.emplace_back([this, cpu = cpus[i], i] { Run(cpu, 0x9E3779B97F4A7C15ull * (i + 1)); });
  }
}

OtherCpuLoad::~OtherCpuLoad() {
  stop_.store(true, std::memory_order_relaxed);
  for (std::thread& t : threads_) t.join();
}

void OtherCpuLoad::Run(int cpu, uint64_t seed) {
  NameThisThread("bench-load-" + std::to_string(cpu));
  if (!PinThreadTo({cpu})) unpinned_.fetch_add(1);
  uint64_t x = seed | 1;
  volatile uint64_t sink = 0;  // keeps the random reads from being optimized away
  while (!stop_.load(std::memory_order_relaxed)) {
    switch (kind_) {
      case OtherCpuLoadKind::kPause:
        for (uint64_t i = 0; i < kRoundOps; ++i) _mm_pause();
        break;
      case OtherCpuLoadKind::kStream:
        // 1 MiB at a time: through the caches (one memset of the whole
        // buffer cost the worker nothing, plausibly streamed past them),
        // and a stop is seen within a millisecond.
        for (size_t at = 0; at < buffer_bytes_ && !stop_.load(std::memory_order_relaxed); at += size_t{1} << 20) {
          std::memset(buffer_.get() + at, static_cast<int>(x++), std::min(size_t{1} << 20, buffer_bytes_ - at));
        }
        break;
      case OtherCpuLoadKind::kRandom: {
        uint64_t sum = 0;
        for (uint64_t i = 0; i < kRoundOps; ++i) {  // xorshift64: independent misses, overlapped as replay's
          x ^= x << 13;
          x ^= x >> 7;
          x ^= x << 17;
          sum += static_cast<unsigned char>(buffer_[x % buffer_bytes_]);
        }
        sink = sink + sum;
        break;
      }
      case OtherCpuLoadKind::kNone:
        return;
    }
    rounds_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace rolis::bench
