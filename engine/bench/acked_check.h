// The check behind rolis-bench --check-acked (docs/benchmarks.md,
// "Correctness"): after a replicated run, with the leader stopped as if it
// crashed as the run ended, every transaction the bench acknowledged is on
// a majority of the members. An acknowledgement means the watermark covered
// the transaction, so the leader counted its slot as accepted by a majority
// (StreamStatus.committed_slot): here each follower that is still up is
// asked, over its admin API, which slots it holds (next_slot), and a
// majority, the leader included, must hold every slot below committed_slot
// of every stream. With three members and one follower killed, that is the
// surviving follower holding them all in its log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rolis/status.h"
#include "rolis/v1/admin.pb.h"

namespace rolis::bench {

// The admin Status of the member at host:port (5 s deadline).
Status MemberStatus(const std::string& admin_address, v1::StatusResponse* out);

// CheckMajorityHolds with the followers' Status asked of their admin
// addresses, printing the summary line to stderr.
Status CheckAcknowledgedOnMajority(const v1::StatusResponse& leader, const std::vector<std::string>& follower_admins,
                                   uint32_t replicas, uint64_t acked_ts);

// OK when, for every stream of `leader`, at least a majority of `replicas`
// members (the leader and the `followers` whose next_slot reaches its
// committed_slot) hold its committed slots, and the acknowledged ts is
// within the leader's watermark; kInternal saying which stream and slots
// otherwise. `summary` gets one line of figures either way.
Status CheckMajorityHolds(const v1::StatusResponse& leader, const std::vector<v1::StatusResponse>& followers,
                          uint32_t replicas, uint64_t acked_ts, std::string* summary);

}  // namespace rolis::bench
