#include <algorithm>

#include "workloads/workload.h"

namespace rolis::workloads {

void TxnRequest::Normalize() {
  std::sort(keys.begin(), keys.end(), [](const LockKey& a, const LockKey& b) { return a.hash < b.hash; });
  size_t out = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (out > 0 && keys[out - 1].hash == keys[i].hash) {
      keys[out - 1].write = keys[out - 1].write || keys[i].write;
    } else {
      keys[out++] = keys[i];
    }
  }
  keys.resize(out);
}

}  // namespace rolis::workloads
