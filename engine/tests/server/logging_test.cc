// rolisd's logging (server/logging.h): the engine's lines (rolis/log.h) come
// out through rolisd's logger, as JSON lines naming their component, and
// --log-level filters them.
#include "server/logging.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "rolis/log.h"

namespace rolis::server {
namespace {

std::vector<nlohmann::json> ParseLines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(nlohmann::json::parse(line));  // throws on a line that is not JSON
  }
  return lines;
}

TEST(LoggingTest, EngineLinesAreJsonUnderTheirComponentAndFilteredByLevel) {
  ASSERT_TRUE(SetupLogging(LogFormat::kJson, "info"));
  ::testing::internal::CaptureStderr();
  rolis::log::Printf(rolis::log::Level::kInfo, "replication", "rolis-repl %u: state transfer done", 2u);
  rolis::log::Write(rolis::log::Level::kDebug, "replication", "rolis-repl 2: below the level");
  rolis::log::Write(rolis::log::Level::kError, "durability", "rolis-repl 2: checkpoint failed: \"disk\"");
  spdlog::info("rolisd's own line");
  const std::string out = ::testing::internal::GetCapturedStderr();
  rolis::log::SetSink(nullptr);
  std::vector<nlohmann::json> lines;
  ASSERT_NO_THROW(lines = ParseLines(out)) << out;
  ASSERT_EQ(lines.size(), 3u) << out;
  EXPECT_EQ(lines[0]["logger"], "replication");
  EXPECT_EQ(lines[0]["level"], "info");
  EXPECT_EQ(lines[0]["msg"], "rolis-repl 2: state transfer done");
  EXPECT_EQ(lines[1]["logger"], "durability");
  EXPECT_EQ(lines[1]["level"], "error");
  EXPECT_EQ(lines[1]["msg"], "rolis-repl 2: checkpoint failed: \"disk\"");
  EXPECT_EQ(lines[2]["logger"], "rolisd");
}

TEST(LoggingTest, EngineLinesFollowALaterSetup) {
  ASSERT_TRUE(SetupLogging(LogFormat::kJson, "info"));
  rolis::log::Write(rolis::log::Level::kInfo, "replication", "a line that creates the component's logger");
  ASSERT_TRUE(SetupLogging(LogFormat::kJson, "warn"));
  ::testing::internal::CaptureStderr();
  rolis::log::Write(rolis::log::Level::kInfo, "replication", "below warn");
  rolis::log::Write(rolis::log::Level::kWarn, "replication", "at warn");
  const std::string out = ::testing::internal::GetCapturedStderr();
  rolis::log::SetSink(nullptr);
  std::vector<nlohmann::json> lines;
  ASSERT_NO_THROW(lines = ParseLines(out)) << out;
  ASSERT_EQ(lines.size(), 1u) << out;
  EXPECT_EQ(lines[0]["msg"], "at warn");
}

}  // namespace
}  // namespace rolis::server
