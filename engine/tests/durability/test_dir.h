// A fresh directory under the system's temporary directory, removed with
// everything in it when the test ends; and small builders of slots.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "crc32c.h"
#include "types.h"

namespace rolis::durability {

class TestDir {
 public:
  TestDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rolis-durability-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~TestDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline replication::BatchPtr TestBatch(uint64_t epoch, uint64_t ts, std::string payload) {
  auto b = std::make_shared<replication::Batch>();
  b->epoch = epoch;
  b->last_ts = ts;
  b->txn_count = 1;
  b->payload = std::move(payload);
  b->crc = replication::Crc32c(b->payload);
  return b;
}

inline replication::Slot TestSlot(uint64_t index, uint64_t ballot, size_t bytes = 100) {
  std::string p(bytes, static_cast<char>('a' + index % 26));
  return replication::Slot{index, ballot, TestBatch(ballot, index + 1, std::move(p))};
}

}  // namespace rolis::durability
