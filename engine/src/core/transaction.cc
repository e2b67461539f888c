// Transaction's methods that have a default: the ones an implementation
// may do better (TxnImpl overrides them).
#include <string>

#include "rolis/db.h"

namespace rolis {

Status Transaction::UpdateRangeError(size_t value_len, size_t offset, size_t len) {
  return Status::InvalidArgument("update of bytes [" + std::to_string(offset) + ", " + std::to_string(offset + len) +
                                 ") passes the end of the " + std::to_string(value_len) +
                                 "-byte value; use Put to change its length");
}

Status Transaction::Update(Table* table, std::string_view key, size_t offset, std::string_view bytes) {
  std::string value;
  if (Status s = Get(table, key, &value); !s.ok()) return s;
  if (Status s = CheckUpdateRange(value.size(), offset, bytes.size()); !s.ok()) return s;
  value.replace(offset, bytes.size(), bytes);
  return Put(table, key, value);
}

}  // namespace rolis
