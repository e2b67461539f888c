#include "server/logging.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>

#include "rolis/log.h"

namespace rolis::server {
namespace {

// One JSON object a line (nlohmann::json):
// {"ts":"2026-01-02T03:04:05.678901Z","level":"info","logger":"rolisd","msg":"..."}
// where logger is "rolisd", or the engine component of a rolis/log.h line.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(msg.time.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(us / 1000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    auto level = spdlog::level::to_string_view(msg.level);
    nlohmann::ordered_json line;
    line["ts"] = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us % 1000000);
    line["level"] = std::string_view(level.data(), level.size());
    line["logger"] = std::string_view(msg.logger_name.data(), msg.logger_name.size());
    line["msg"] = std::string_view(msg.payload.data(), msg.payload.size());
    std::string out = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += '\n';
    dest.append(out.data(), out.data() + out.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

struct ErrorClassState {
  std::chrono::steady_clock::time_point last{};
  uint64_t suppressed = 0;
  bool logged = false;
};

// The loggers of the engine's components: clones of the default logger
// (same sinks, format and level) under the component's name.
std::mutex g_component_mu;
std::map<std::string, std::shared_ptr<spdlog::logger>, std::less<>> g_component_loggers;

std::shared_ptr<spdlog::logger> ComponentLogger(std::string_view component) {
  std::lock_guard<std::mutex> g(g_component_mu);
  auto it = g_component_loggers.find(component);
  if (it == g_component_loggers.end()) {
    it = g_component_loggers.emplace(std::string(component), spdlog::default_logger()->clone(std::string(component)))
             .first;
  }
  return it->second;
}

spdlog::level::level_enum SpdlogLevel(rolis::log::Level level) {
  switch (level) {
    case rolis::log::Level::kDebug:
      return spdlog::level::debug;
    case rolis::log::Level::kInfo:
      return spdlog::level::info;
    case rolis::log::Level::kWarn:
      return spdlog::level::warn;
    case rolis::log::Level::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

void ForwardEngineLine(rolis::log::Level level, std::string_view component, std::string_view message) {
  ComponentLogger(component)->log(SpdlogLevel(level), spdlog::string_view_t(message.data(), message.size()));
}

std::mutex g_error_mu;
std::map<std::string, ErrorClassState, std::less<>> g_error_classes;

}  // namespace

std::string JsonEscape(std::string_view s) {
  std::string quoted = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return quoted.substr(1, quoted.size() - 2);
}

bool SetupLogging(LogFormat format, const std::string& level) {
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") return false;
  auto logger = std::make_shared<spdlog::logger>("rolisd", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == LogFormat::kJson) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %^%-5l%$ %v", spdlog::pattern_time_type::utc);
  }
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  {
    std::lock_guard<std::mutex> g(g_component_mu);
    g_component_loggers.clear();  // clones of the logger just replaced
  }
  rolis::log::SetSink(&ForwardEngineLine);
  return true;
}

void LogErrorClass(std::string_view error_class, std::string_view message, std::chrono::seconds interval) {
  auto now = std::chrono::steady_clock::now();
  uint64_t suppressed = 0;
  {
    std::lock_guard<std::mutex> g(g_error_mu);
    auto it = g_error_classes.find(error_class);
    if (it == g_error_classes.end()) it = g_error_classes.emplace(std::string(error_class), ErrorClassState{}).first;
    ErrorClassState& st = it->second;
    if (st.logged && now - st.last < interval) {
      st.suppressed++;
      return;
    }
    suppressed = st.suppressed;
    st.suppressed = 0;
    st.last = now;
    st.logged = true;
  }
  if (suppressed > 0) {
    spdlog::warn("{}: {} ({} more since the last report)", error_class, message, suppressed);
  } else {
    spdlog::warn("{}: {}", error_class, message);
  }
}

}  // namespace rolis::server
