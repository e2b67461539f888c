// Small pieces the Replica's classes share: the "unavailable" error (no
// majority reachable, retry), the text of a log key, and which of two
// decided records is newer.
#pragma once

#include <string>

#include "membership.h"
#include "rolis/status.h"
#include "types.h"

namespace rolis::replication {

inline Status Unavailable(const std::string& why) { return Status(StatusCode::kInternal, "unavailable: " + why); }

inline std::string KeyStr(LogKey k) { return std::to_string(k.epoch) + "." + std::to_string(k.ts); }

// `a` is a newer decided record than `b` (null is the oldest).
inline bool IsBetterDecided(const DecidedPtr& a, const DecidedPtr& b) {
  if (!a) return false;
  return !b || NewerRecord(*a, *b);
}

}  // namespace rolis::replication
