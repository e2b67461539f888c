// rolis/log.h: the engine's log lines reach the installed sink whole, and
// the default sink writes them to stderr as one line each.
#include "rolis/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rolis::log {
namespace {

struct Captured {
  Level level;
  std::string component;
  std::string message;
};

std::vector<Captured>& Lines() {
  static std::vector<Captured> lines;
  return lines;
}

void Capture(Level level, std::string_view component, std::string_view message) {
  Lines().push_back({level, std::string(component), std::string(message)});
}

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override { Lines().clear(); }
  void TearDown() override { SetSink(nullptr); }
};

TEST_F(LogTest, InstalledSinkGetsLevelComponentAndFormattedMessage) {
  SetSink(&Capture);
  Printf(Level::kWarn, "replication", "rolis-repl %u: behind on stream %u (at %lu)", 3u, 6u, 31652ul);
  Write(Level::kError, "durability", "rolis-repl 3: DATA LOSS SUSPECTED: empty");
  ASSERT_EQ(Lines().size(), 2u);
  EXPECT_EQ(Lines()[0].level, Level::kWarn);
  EXPECT_EQ(Lines()[0].component, "replication");
  EXPECT_EQ(Lines()[0].message, "rolis-repl 3: behind on stream 6 (at 31652)");
  EXPECT_EQ(Lines()[1].level, Level::kError);
  EXPECT_EQ(Lines()[1].component, "durability");
}

TEST_F(LogTest, LongMessagesAreNotCut) {
  SetSink(&Capture);
  const std::string long_part(5000, 'x');
  Printf(Level::kInfo, "replication", "start %s end", long_part.c_str());
  ASSERT_EQ(Lines().size(), 1u);
  EXPECT_EQ(Lines()[0].message, "start " + long_part + " end");
}

TEST_F(LogTest, DefaultSinkWritesTheMessageAsOneStderrLine) {
  SetSink(&Capture);
  SetSink(nullptr);
  ::testing::internal::CaptureStderr();
  Printf(Level::kInfo, "replication", "rolis-repl %u: state transfer done: %zu keys", 2u, size_t{287});
  Write(Level::kError, "durability", "rolis-repl 2: checkpoint failed: disk full");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(Lines().empty());
  EXPECT_EQ(err, "rolis-repl 2: state transfer done: 287 keys\nrolis-repl 2: checkpoint failed: disk full\n");
}

}  // namespace
}  // namespace rolis::log
