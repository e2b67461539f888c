// Logging of rolisd (spdlog): text or JSON lines on stderr. No per-request
// line at info level; errors are reported once per class and interval
// (LogErrorClass), with the number suppressed since the last line. The
// engine's own lines (rolis/log.h) go through the same logger, one named
// for their component ("replication", "durability").
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <string>
#include <string_view>

#include "server/config.h"

namespace rolis::server {

// Installs the default logger, and the engine's log sink (rolis/log.h)
// forwarding to it. Returns false (and leaves both as they are) for an
// unknown level.
bool SetupLogging(LogFormat format, const std::string& level);

// JSON-escapes `s` as the JSON log lines do (nlohmann::json; bytes that are
// not UTF-8 become U+FFFD). Exposed for tests.
std::string JsonEscape(std::string_view s);

// Logs `message` at warn level under `error_class` at most once per
// `interval` per class; later occurrences within it are counted and reported
// with the next line of that class.
void LogErrorClass(std::string_view error_class, std::string_view message,
                   std::chrono::seconds interval = std::chrono::seconds(60));

}  // namespace rolis::server
