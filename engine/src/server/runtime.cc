#include "server/runtime.h"

#include <absl/synchronization/mutex.h>

namespace rolis::server {

void TuneProcessRuntime() { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore); }

}  // namespace rolis::server
