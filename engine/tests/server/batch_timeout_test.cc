// --batch-timeout against the cases shared with the RolisCluster CRD and the
// operator (api/v1alpha1/testdata/batch-timeouts.txt, docs/operator.md,
// "Batch timeout"): rolisd accepts exactly what the API server admits, in
// the spelling a user wrote and in the one the operator writes, with the
// same microseconds.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "server/config.h"

namespace rolis::server {
namespace {

struct Case {
  std::string value, flag;
  bool admitted = false;
  long micros = 0;
};

std::vector<Case> ReadCases() {
  std::ifstream in(ROLIS_BATCH_TIMEOUT_CASES);
  EXPECT_TRUE(in) << "cannot read " << ROLIS_BATCH_TIMEOUT_CASES;
  std::vector<Case> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    Case c;
    std::string verdict;
    f >> c.value >> verdict;
    c.admitted = verdict == "admitted";
    if (c.admitted) f >> c.flag >> c.micros;
    out.push_back(c);
  }
  return out;
}

ParseResult ParseBatchTimeoutFlag(const std::string& value) {
  std::string flag = "--batch-timeout=" + value;
  const char* argv[] = {"rolisd", flag.c_str()};
  return ParseConfig(2, argv);
}

TEST(BatchTimeoutTest, RolisdAcceptsWhatTheApiServerAdmitsAndWhatTheOperatorWrites) {
  std::vector<Case> cases = ReadCases();
  ASSERT_GE(cases.size(), 10u);
  for (const Case& c : cases) {
    ParseResult user = ParseBatchTimeoutFlag(c.value);
    EXPECT_EQ(user.kind == ParseResult::Kind::kOk, c.admitted)
        << "--batch-timeout=" << c.value << ": " << user.message << " (the API server "
        << (c.admitted ? "admits" : "refuses") << " it)";
    if (!c.admitted) continue;
    EXPECT_EQ(user.config.batch_timeout.count(), c.micros) << c.value;
    ParseResult op = ParseBatchTimeoutFlag(c.flag);
    ASSERT_EQ(op.kind, ParseResult::Kind::kOk) << "--batch-timeout=" << c.flag << " (the operator's): " << op.message;
    EXPECT_EQ(op.config.batch_timeout.count(), c.micros) << c.flag;
  }
}

TEST(BatchTimeoutTest, OtherSpellingsAndMalformedValues) {
  auto micros = [](const std::string& v) -> long {
    auto us = ParseBatchTimeout(v);
    return us ? static_cast<long>(us->count()) : -1;
  };
  EXPECT_EQ(micros("500\xce\xbcs"), 500);  // Greek mu, which Go accepts too
  EXPECT_EQ(micros("1"), 1000000);        // a bare number is seconds
  EXPECT_EQ(micros("1MS"), 1000);         // as before: units in any case
  EXPECT_EQ(micros(".5ms"), 500);
  EXPECT_EQ(micros("5.ms"), 5000);
  for (const char* bad : {"", "ms", ".ms", "1.5", "-1ms", "+1ms", "1 ms", "1xs", "1ms-", "99999999999999999999s",
                          "0.0000000000000000000000000001s", "1\xc2s"}) {
    EXPECT_EQ(micros(bad), -1) << bad;
  }
}

}  // namespace
}  // namespace rolis::server
