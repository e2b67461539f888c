#include "rolis/byte_size.h"

#include <cctype>
#include <charconv>
#include <cstdint>

namespace rolis {

std::optional<size_t> ParseByteSize(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) i++;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + i, n);
  if (i == 0 || ec != std::errc() || end != text.data() + i) return std::nullopt;
  std::string unit;
  for (char ch : text.substr(i)) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  uint64_t mult;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") mult = 1024;
  else if (unit == "m" || unit == "mb" || unit == "mib") mult = 1024 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") mult = 1024ull * 1024 * 1024;
  else return std::nullopt;
  if (n > (uint64_t{1} << 40) / mult) return std::nullopt;
  return static_cast<size_t>(n * mult);
}

}  // namespace rolis
