// CRC-32C (Castagnoli), the checksum of every replicated batch payload.
#pragma once

#include <cstdint>
#include <string_view>

namespace rolis::replication {

// The CRC of `data` continued from `crc` (0 to start): Crc32c(a + b) ==
// Crc32c(b, Crc32c(a)).
uint32_t Crc32c(std::string_view data, uint32_t crc = 0);

}  // namespace rolis::replication
