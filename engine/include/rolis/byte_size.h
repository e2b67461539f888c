// Sizes as flags take them: "1024", "64KiB", "4MiB", "2GiB" (1024-based;
// K/KB, M/MB and G/GB mean the same; case does not matter).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace rolis {

// nullopt for anything else, and beyond 1 TiB.
std::optional<size_t> ParseByteSize(const std::string& text);

}  // namespace rolis
