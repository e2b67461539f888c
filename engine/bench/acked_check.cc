#include "acked_check.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>

#include "rolis/v1/admin.grpc.pb.h"

namespace rolis::bench {

Status MemberStatus(const std::string& admin_address, v1::StatusResponse* out) {
  auto channel = grpc::CreateChannel(admin_address, grpc::InsecureChannelCredentials());
  auto stub = v1::Admin::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status g = stub->Status(&ctx, v1::StatusRequest(), out);
  if (!g.ok()) return Status::Internal("admin Status of " + admin_address + ": " + g.error_message());
  return Status::OK();
}

Status CheckMajorityHolds(const v1::StatusResponse& leader, const std::vector<v1::StatusResponse>& followers,
                          uint32_t replicas, uint64_t acked_ts, std::string* summary) {
  const uint32_t majority = replicas / 2 + 1;
  std::string line = "acknowledged up to ts " + std::to_string(acked_ts) + ", leader's watermark ts " +
                     std::to_string(leader.watermark().ts()) + "; per stream committed slots / held by";
  Status bad;
  if (acked_ts > leader.watermark().ts()) {
    bad = Status::Internal("an acknowledged transaction (ts " + std::to_string(acked_ts) +
                           ") is beyond the leader's watermark (ts " + std::to_string(leader.watermark().ts()) + ")");
  }
  if (leader.streams_size() == 0) bad = Status::Internal("the leader reports no streams");
  for (const v1::StreamStatus& s : leader.streams()) {
    const uint64_t committed = s.committed_slot();
    uint32_t holders = 1;  // the leader
    std::string held;
    for (const v1::StatusResponse& f : followers) {
      uint64_t next = 0;
      for (const v1::StreamStatus& fs : f.streams()) {
        if (fs.stream() == s.stream()) next = fs.next_slot();
      }
      if (next >= committed) holders++;
      held += " " + std::to_string(f.id()) + ":" + std::to_string(next);
    }
    line += " [" + std::to_string(s.stream()) + "] " + std::to_string(committed) + " /" + held;
    if (holders < majority && bad.ok()) {
      bad = Status::Internal("stream " + std::to_string(s.stream()) + ": the leader counts slots below " +
                             std::to_string(committed) + " as accepted by a majority, but only " +
                             std::to_string(holders) + " of " + std::to_string(replicas) +
                             " members hold them (followers' next slots:" + held + ")");
    }
  }
  if (summary != nullptr) *summary = line;
  return bad;
}

Status CheckAcknowledgedOnMajority(const v1::StatusResponse& leader, const std::vector<std::string>& follower_admins,
                                   uint32_t replicas, uint64_t acked_ts) {
  std::vector<v1::StatusResponse> followers;
  for (const std::string& admin : follower_admins) {
    v1::StatusResponse f;
    Status s = MemberStatus(admin, &f);
    if (!s.ok()) return s;
    followers.push_back(std::move(f));
  }
  std::string summary;
  Status s = CheckMajorityHolds(leader, followers, replicas, acked_ts, &summary);
  std::fprintf(stderr, "rolis-bench: --check-acked: %s: %s\n", s.ok() ? "ok" : "FAILED", summary.c_str());
  return s;
}

}  // namespace rolis::bench
