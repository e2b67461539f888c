#include "frame.h"

#include "crc32c.h"
#include "file_env.h"
#include "record_codec.h"

namespace rolis::durability {
namespace {

constexpr uint32_t kMaskDelta = 0xa282ead8u;
uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

uint32_t FrameCrc(uint8_t type, std::string_view a, std::string_view b) {
  char t = static_cast<char>(type);
  uint32_t c = replication::Crc32c(std::string_view(&t, 1));
  c = replication::Crc32c(a, c);
  if (!b.empty()) c = replication::Crc32c(b, c);
  return Mask(c);
}

}  // namespace

std::string FrameHeader(FrameType type, std::string_view part1, std::string_view part2) {
  std::string h;
  h.reserve(kFrameHeaderBytes);
  PutU32(&h, static_cast<uint32_t>(part1.size() + part2.size()));
  PutU32(&h, FrameCrc(static_cast<uint8_t>(type), part1, part2));
  PutU8(&h, static_cast<uint8_t>(type));
  return h;
}

void AppendFrame(std::string* out, FrameType type, std::string_view payload) {
  out->append(FrameHeader(type, payload));
  out->append(payload);
}

const char* FrameFaultName(FrameFault f) {
  switch (f) {
    case FrameFault::kNone: return "none";
    case FrameFault::kShortHeader: return "incomplete frame header";
    case FrameFault::kShortPayload: return "frame runs past the end of the file";
    case FrameFault::kTooLarge: return "frame length over the limit";
    case FrameFault::kBadChecksum: return "frame checksum mismatch";
    case FrameFault::kUnknownType: return "unknown frame type";
  }
  return "?";
}

FrameFault ParseFrame(std::string_view data, size_t offset, Frame* out, size_t* next) {
  if (offset > data.size() || data.size() - offset < kFrameHeaderBytes) return FrameFault::kShortHeader;
  const char* h = data.data() + offset;
  uint32_t len = LoadU32(h);
  uint32_t crc = LoadU32(h + 4);
  uint8_t type = static_cast<uint8_t>(h[8]);
  if (len > kMaxFramePayload) return FrameFault::kTooLarge;
  if (data.size() - offset - kFrameHeaderBytes < len) return FrameFault::kShortPayload;
  std::string_view payload = data.substr(offset + kFrameHeaderBytes, len);
  if (FrameCrc(type, payload, {}) != crc) return FrameFault::kBadChecksum;
  if (type == 0 || type > kMaxFrameType) return FrameFault::kUnknownType;
  out->type = static_cast<FrameType>(type);
  out->payload = payload;
  *next = offset + kFrameHeaderBytes + len;
  return FrameFault::kNone;
}

bool ValidFrameAfter(std::string_view data, size_t from, uint64_t budget) {
  for (size_t off = from + 1; off + kFrameHeaderBytes <= data.size(); off++) {
    const char* h = data.data() + off;
    uint32_t len = LoadU32(h);
    uint8_t type = static_cast<uint8_t>(h[8]);
    if (type == 0 || type > kMaxFrameType || len > data.size() - off - kFrameHeaderBytes) continue;
    if (len > budget) return true;  // cannot afford to look: assume the worst
    budget -= len;
    Frame f;
    size_t next;
    if (ParseFrame(data, off, &f, &next) == FrameFault::kNone) return true;
  }
  return false;
}

Status ScanFrames(std::string_view data, const std::function<Status(const Frame&, size_t offset)>& fn,
                  FrameScan* out) {
  *out = FrameScan{};
  size_t off = 0;
  while (off < data.size()) {
    Frame f;
    size_t next = 0;
    FrameFault fault = ParseFrame(data, off, &f, &next);
    if (fault != FrameFault::kNone) {
      out->valid_end = off;
      out->fault = fault;
      out->tail = !ValidFrameAfter(data, off);
      return Status::OK();
    }
    if (Status s = fn(f, off); !s.ok()) {
      out->valid_end = off;
      return s;
    }
    off = next;
  }
  out->valid_end = off;
  return Status::OK();
}

Status ReadFrame(SequentialFile& file, uint64_t remaining, std::string* buf, Frame* out, FrameFault* fault,
                 size_t* consumed) {
  *fault = FrameFault::kNone;
  *consumed = 0;
  if (remaining < kFrameHeaderBytes) {
    *fault = FrameFault::kShortHeader;
    return Status::OK();
  }
  std::string head;
  if (Status s = file.Read(kFrameHeaderBytes, &head); !s.ok()) return s;
  if (head.size() < kFrameHeaderBytes) {
    *fault = FrameFault::kShortHeader;
    return Status::OK();
  }
  uint32_t len = LoadU32(head.data());
  if (len > kMaxFramePayload) {
    *fault = FrameFault::kTooLarge;
    return Status::OK();
  }
  if (len > remaining - kFrameHeaderBytes) {
    *fault = FrameFault::kShortPayload;
    return Status::OK();
  }
  std::string payload;
  if (Status s = file.Read(len, &payload); !s.ok()) return s;
  if (payload.size() < len) {
    *fault = FrameFault::kShortPayload;
    return Status::OK();
  }
  *buf = std::move(head);
  buf->append(payload);
  size_t next = 0;
  *fault = ParseFrame(*buf, 0, out, &next);
  *consumed = kFrameHeaderBytes + len;
  return Status::OK();
}

}  // namespace rolis::durability
