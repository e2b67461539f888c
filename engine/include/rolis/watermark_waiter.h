// Completion of a wait for the replication watermark G (docs/replication.md,
// "Normal operation"): a committed read-write transaction is answered once G
// covers its key, or fails when the member stops leading before that (its
// outcome is then unknown to the client). The replication layer completes
// it; the server implements it (server::WatermarkWaiter answers a gRPC call).
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
