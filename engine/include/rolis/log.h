// The engine's log lines (replication, durability): one seam with a
// replaceable sink. The default sink writes each message as one line to
// stderr; rolisd replaces it with one that forwards to its logger, so that
// --log-format and --log-level govern these lines too (docs/operations.md,
// "Logging").
#pragma once

#include <string>
#include <string_view>

namespace rolis::log {

enum class Level { kDebug, kInfo, kWarn, kError };

// `component` names the layer ("replication", "durability"); `message` is
// the line without its newline.
using Sink = void (*)(Level level, std::string_view component, std::string_view message);

// Installs `sink` for every later line; nullptr restores the default sink.
// Meant for startup, before the engine's threads log.
void SetSink(Sink sink);

void Write(Level level, std::string_view component, std::string_view message);

// Write with a printf-style message.
void Printf(Level level, std::string_view component, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace rolis::log
