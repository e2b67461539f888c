#include "rolis/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace rolis::log {
namespace {

// The message and its newline in one write, so that lines of concurrent
// threads do not interleave.
void StderrSink(Level, std::string_view, std::string_view message) {
  std::string line;
  line.reserve(message.size() + 1);
  line.append(message);
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stderr);
}

std::atomic<Sink> g_sink{&StderrSink};

}  // namespace

void SetSink(Sink sink) { g_sink.store(sink != nullptr ? sink : &StderrSink, std::memory_order_release); }

void Write(Level level, std::string_view component, std::string_view message) {
  g_sink.load(std::memory_order_acquire)(level, component, message);
}

void Printf(Level level, std::string_view component, const char* format, ...) {
  char small[512];
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(small, sizeof(small), format, args);
  va_end(args);
  if (n < 0) {
    va_end(again);
    return;
  }
  if (static_cast<size_t>(n) < sizeof(small)) {
    va_end(again);
    Write(level, component, std::string_view(small, static_cast<size_t>(n)));
    return;
  }
  std::string big(static_cast<size_t>(n), '\0');
  std::vsnprintf(big.data(), big.size() + 1, format, again);
  va_end(again);
  Write(level, component, big);
}

}  // namespace rolis::log
