// Completion of a wait for the replication watermark G (docs/replication.md,
// "Normal operation"): a committed read-write transaction is answered once G
// covers its key, or fails when the member stops leading before that (its
// outcome is then unknown to the client). The replication layer completes
// it; the server's waiters answer a gRPC call with it (a failed wait becomes
// server::Unacknowledged, engine/src/server/call_outcome.h).
#pragma once

#include <string>

namespace rolis {

class WatermarkWaiter {
 public:
  virtual ~WatermarkWaiter() = default;
  // Exactly once, from another thread than the one that started the wait:
  // ok, or not and why.
  virtual void Done(bool ok, const std::string& why) = 0;
};

}  // namespace rolis
