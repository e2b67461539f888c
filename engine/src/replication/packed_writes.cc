#include "packed_writes.h"

#include <algorithm>
#include <cstring>

namespace rolis::replication {

namespace {

constexpr size_t kBlockBytes = size_t{1} << 20;
constexpr size_t kRecordHeader = 12;  // table, key length, value length

uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void Put32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }

}  // namespace

void PackedWrites::Add(uint32_t table, std::string_view key, std::string_view value) {
  const size_t need = kRecordHeader + key.size() + value.size();
  if (blocks_.empty() || blocks_.back().capacity() - blocks_.back().size() < need) {
    // A full block is never grown (that would copy it): a new one starts.
    blocks_.emplace_back();
    blocks_.back().reserve(std::max(kBlockBytes, need));
  }
  std::string& b = blocks_.back();
  const size_t at = b.size();
  b.resize(at + kRecordHeader);
  Put32(&b[at], table);
  Put32(&b[at + 4], static_cast<uint32_t>(key.size()));
  Put32(&b[at + 8], static_cast<uint32_t>(value.size()));
  b.append(key);
  b.append(value);
  if (count_ > 0 && ordered_ && !InScanOrder(last_table_, last_key_, table, key)) ordered_ = false;
  if (ordered_) {
    last_table_ = table;
    last_key_.assign(key);
  }
  count_++;
}

void PackedWrites::Clear() {
  blocks_.clear();
  count_ = 0;
  ordered_ = true;
  last_key_.clear();
}

uint64_t PackedWrites::bytes() const {
  uint64_t n = 0;
  for (const std::string& b : blocks_) n += b.capacity();
  return n;
}

PackedWrites::Record PackedWrites::At(Ref r) const {
  const char* p = blocks_[r.block].data() + r.offset;
  Record out;
  out.table = Load32(p);
  const uint32_t k = Load32(p + 4), v = Load32(p + 8);
  out.key = std::string_view(p + kRecordHeader, k);
  out.value = std::string_view(p + kRecordHeader + k, v);
  return out;
}

void PackedWrites::ForEach(const std::function<bool(const Record&)>& fn) const {
  for (uint32_t i = 0; i < blocks_.size(); i++) {
    for (size_t off = 0; off < blocks_[i].size();) {
      const Record r = At(Ref{i, static_cast<uint32_t>(off)});
      if (!fn(r)) return;
      off += kRecordHeader + r.key.size() + r.value.size();
    }
  }
}

std::vector<PackedWrites::Ref> PackedWrites::Refs() const {
  std::vector<Ref> out;
  out.reserve(count_);
  for (uint32_t i = 0; i < blocks_.size(); i++) {
    for (size_t off = 0; off < blocks_[i].size();) {
      out.push_back(Ref{i, static_cast<uint32_t>(off)});
      const char* p = blocks_[i].data() + off;
      off += kRecordHeader + Load32(p + 4) + Load32(p + 8);
    }
  }
  return out;
}

Status ReceivedSnapshot::Begin(const SnapshotReply& header) {
  if (begun_) return Status::FailedPrecondition("snapshot already begun");
  if (check_) {
    if (Status s = check_(header); !s.ok()) return s;
  }
  header_ = header;
  header_.writes.clear();
  begun_ = true;
  return Status::OK();
}

Status ReceivedSnapshot::Add(uint32_t table, std::string_view key, std::string_view value) {
  if (!begun_ || ended_) return Status::FailedPrecondition("snapshot not begun, or ended");
  writes_.Add(table, key, value);
  return Status::OK();
}

Status ReceivedSnapshot::End() {
  if (!begun_ || ended_) return Status::FailedPrecondition("snapshot not begun, or ended");
  ended_ = true;
  return Status::OK();
}

}  // namespace rolis::replication
