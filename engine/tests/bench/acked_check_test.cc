// CheckMajorityHolds (acked_check.h): the leader's committed slots must be
// held by a majority, the leader counting as one; an acknowledgement beyond
// the leader's watermark fails too.
#include "acked_check.h"

#include <gtest/gtest.h>

namespace rolis::bench {
namespace {

v1::StatusResponse Member(uint32_t id, std::vector<uint64_t> next, std::vector<uint64_t> committed = {},
                          uint64_t watermark = 0) {
  v1::StatusResponse r;
  r.set_id(id);
  r.mutable_watermark()->set_ts(watermark);
  for (size_t t = 0; t < next.size(); t++) {
    auto* s = r.add_streams();
    s->set_stream(static_cast<uint32_t>(t));
    s->set_next_slot(next[t]);
    if (t < committed.size()) s->set_committed_slot(committed[t]);
  }
  return r;
}

TEST(AckedCheck, ASurvivorHoldingEveryCommittedSlotPasses) {
  const auto leader = Member(1, {100, 50}, {90, 50}, 1000);
  std::string summary;
  Status s = CheckMajorityHolds(leader, {Member(2, {95, 50})}, 3, 1000, &summary);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(summary.find("[0] 90 / 2:95"), std::string::npos) << summary;
}

TEST(AckedCheck, ASurvivorMissingCommittedSlotsFails) {
  const auto leader = Member(1, {100, 50}, {90, 50}, 1000);
  Status s = CheckMajorityHolds(leader, {Member(2, {95, 49})}, 3, 1000, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("stream 1"), std::string::npos) << s.ToString();
  // Five members, two followers left holding: with the leader, three.
  EXPECT_TRUE(CheckMajorityHolds(leader, {Member(2, {90, 50}), Member(3, {91, 50}), Member(4, {0, 0})}, 5, 1000,
                                 nullptr)
                  .ok());
  EXPECT_FALSE(CheckMajorityHolds(leader, {Member(2, {90, 50}), Member(3, {89, 50}), Member(4, {0, 0})}, 5, 1000,
                                  nullptr)
                   .ok());
}

TEST(AckedCheck, AnAcknowledgementBeyondTheWatermarkFails) {
  const auto leader = Member(1, {100}, {90}, 1000);
  Status s = CheckMajorityHolds(leader, {Member(2, {100})}, 3, 1001, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("beyond the leader's watermark"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace rolis::bench
