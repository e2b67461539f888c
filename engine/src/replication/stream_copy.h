#pragma once

#include <cstddef>

namespace rolis::replication {

// Copies n bytes from src to dst, writing dst's whole 64-byte lines with
// non-temporal stores: they go to memory without first reading the line
// and without evicting what the caller's core keeps in cache. For data
// this core will not read again (a batch the loop and senders take on
// another core). Ends with a store fence, so that the bytes are visible
// to another core once the caller publishes them (unlocks a mutex, pushes
// a pointer), as after memcpy.
void CopyPastCaches(char* dst, const char* src, size_t n);

}  // namespace rolis::replication
