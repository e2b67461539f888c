#include "record_codec.h"

#include "crc32c.h"

namespace rolis::durability {

using replication::BatchKind;
using replication::Decided;
using replication::DecidedPtr;
using replication::Slot;

bool ByteReader::Fail(const std::string& why) {
  if (status_.ok()) status_ = Status::InvalidArgument(std::string(what_) + ": " + why);
  return false;
}

bool ByteReader::Need(size_t n, const char* field) {
  if (!status_.ok()) return false;
  if (left() < n) return Fail(std::string(field) + " truncated");
  return true;
}

bool ByteReader::U8(uint8_t* v, const char* field) {
  if (!Need(1, field)) return false;
  *v = static_cast<uint8_t>(in_[pos_]);
  pos_ += 1;
  return true;
}
bool ByteReader::U32(uint32_t* v, const char* field) {
  if (!Need(4, field)) return false;
  *v = LoadU32(in_.data() + pos_);
  pos_ += 4;
  return true;
}
bool ByteReader::U64(uint64_t* v, const char* field) {
  if (!Need(8, field)) return false;
  *v = LoadU64(in_.data() + pos_);
  pos_ += 8;
  return true;
}
bool ByteReader::Bytes(std::string_view* v, const char* field) {
  uint32_t n = 0;
  if (!U32(&n, field)) return false;
  if (!Need(n, field)) return false;
  *v = in_.substr(pos_, n);
  pos_ += n;
  return true;
}
bool ByteReader::Count(uint32_t* n, size_t min_bytes, const char* field) {
  if (!U32(n, field)) return false;
  if (min_bytes > 0 && *n > left() / min_bytes) {
    return Fail(std::string(field) + " " + std::to_string(*n) + " does not fit in " + std::to_string(left()) +
                " bytes");
  }
  return true;
}
bool ByteReader::Version(const char* field) {
  uint8_t v = 0;
  if (!U8(&v, field)) return false;
  if (v != kRecordVersion) return Fail("unknown format version " + std::to_string(v));
  return true;
}
Status ByteReader::Finish() {
  if (status_.ok() && left() != 0) Fail(std::to_string(left()) + " bytes left over");
  return status_;
}

// ---------------------------------------------------------------------------

namespace {
constexpr std::string_view kMagic = "rolisdur";
}

std::string EncodeFileHeader(const FileHeader& h) {
  std::string o(kMagic);
  PutU8(&o, kRecordVersion);
  PutU8(&o, static_cast<uint8_t>(h.kind));
  PutU32(&o, h.stream);
  PutU64(&o, h.key);
  return o;
}

Status DecodeFileHeader(std::string_view in, FileHeader* out) {
  if (in.substr(0, kMagic.size()) != kMagic) return Status::InvalidArgument("file header: not a rolis data file");
  ByteReader r(in.substr(kMagic.size()), "file header");
  uint8_t kind = 0;
  r.Version();
  if (r.U8(&kind, "kind") && (kind < 1 || kind > 3)) r.Fail("unknown file kind " + std::to_string(kind));
  r.U32(&out->stream, "stream");
  r.U64(&out->key, "key");
  out->kind = static_cast<FileKind>(kind);
  return r.Finish();
}

std::string EncodeSlotMeta(uint32_t stream, const Slot& slot) {
  const replication::Batch& b = *slot.value;
  std::string o;
  o.reserve(64);
  PutU8(&o, kRecordVersion);
  PutU32(&o, stream);
  PutU64(&o, slot.index);
  PutU64(&o, slot.ballot);
  PutU8(&o, static_cast<uint8_t>(b.kind));
  PutU64(&o, b.epoch);
  PutU64(&o, b.last_ts);
  PutU32(&o, b.txn_count);
  PutU32(&o, b.crc);
  PutU32(&o, static_cast<uint32_t>(b.payload.size()));
  return o;
}

Status DecodeSlot(std::string_view in, uint32_t* stream, Slot* out) {
  ByteReader r(in, "slot");
  auto b = std::make_shared<replication::Batch>();
  uint8_t kind = 0;
  std::string_view payload;
  r.Version();
  r.U32(stream, "stream");
  r.U64(&out->index, "index");
  r.U64(&out->ballot, "ballot");
  if (r.U8(&kind, "kind") && kind > static_cast<uint8_t>(BatchKind::kBarrier)) {
    r.Fail("unknown batch kind " + std::to_string(kind));
  }
  r.U64(&b->epoch, "batch epoch");
  r.U64(&b->last_ts, "batch last ts");
  r.U32(&b->txn_count, "txn count");
  r.U32(&b->crc, "batch crc");
  r.Bytes(&payload, "payload");
  if (Status s = r.Finish(); !s.ok()) return s;
  if (replication::Crc32c(payload) != b->crc) return Status::InvalidArgument("slot: batch payload crc mismatch");
  b->kind = static_cast<BatchKind>(kind);
  b->payload.assign(payload);
  out->value = std::move(b);
  return Status::OK();
}

std::string EncodePromise(uint64_t epoch) {
  std::string o;
  PutU8(&o, kRecordVersion);
  PutU64(&o, epoch);
  return o;
}

Status DecodePromise(std::string_view in, uint64_t* epoch) {
  ByteReader r(in, "promise");
  r.Version();
  r.U64(epoch, "epoch");
  return r.Finish();
}

namespace {

void PutDecided(std::string* o, const Decided& d) {
  PutU8(o, kRecordVersion);
  PutU64(o, d.record.epoch);
  PutU32(o, static_cast<uint32_t>(d.record.cut.size()));
  for (const auto& [e, ts] : d.record.cut) {
    PutU64(o, e);
    PutU64(o, ts);
  }
  PutU32(o, d.leader_id);
  PutU64(o, d.watermark.epoch);
  PutU64(o, d.watermark.ts);
  PutU64(o, d.config);
  PutU32(o, static_cast<uint32_t>(d.members.size()));
  for (const auto& m : d.members) {
    PutU32(o, m.id);
    PutBytes(o, m.address);
  }
}

bool GetDecided(ByteReader& r, Decided* d) {
  uint32_t n = 0;
  r.Version("decided version");
  r.U64(&d->record.epoch, "decided epoch");
  if (!r.Count(&n, 16, "cut entries")) return false;
  uint64_t prev = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t e = 0, ts = 0;
    r.U64(&e, "cut epoch");
    if (!r.U64(&ts, "cut ts")) return false;
    if (i > 0 && e <= prev) return r.Fail("cut epochs not increasing");
    prev = e;
    d->record.cut[e] = ts;
  }
  r.U32(&d->leader_id, "leader id");
  r.U64(&d->watermark.epoch, "watermark epoch");
  r.U64(&d->watermark.ts, "watermark ts");
  r.U64(&d->config, "config");
  if (!r.Count(&n, 8, "members")) return false;
  d->members.reserve(n);
  for (uint32_t i = 0; i < n; i++) {
    replication::MemberAddr m;
    std::string_view addr;
    r.U32(&m.id, "member id");
    if (!r.Bytes(&addr, "member address")) return false;
    m.address.assign(addr);
    d->members.push_back(std::move(m));
  }
  return r.status().ok();
}

}  // namespace

std::string EncodeDecided(const Decided& d) {
  std::string o;
  PutDecided(&o, d);
  return o;
}

Status DecodeDecided(std::string_view in, DecidedPtr* out) {
  ByteReader r(in, "decided record");
  auto d = std::make_shared<Decided>();
  GetDecided(r, d.get());
  if (Status s = r.Finish(); !s.ok()) return s;
  *out = std::move(d);
  return Status::OK();
}

std::string EncodeControlVote(const replication::ControlVote& v) {
  std::string o;
  PutU8(&o, kRecordVersion);
  PutU64(&o, v.instance);
  PutU64(&o, v.promised);
  PutU64(&o, v.accepted_ballot);
  PutU8(&o, v.accepted ? 1 : 0);
  if (v.accepted) PutDecided(&o, *v.accepted);
  return o;
}

Status DecodeControlVote(std::string_view in, replication::ControlVote* out) {
  ByteReader r(in, "control vote");
  uint8_t has = 0;
  r.Version();
  r.U64(&out->instance, "instance");
  r.U64(&out->promised, "promised");
  r.U64(&out->accepted_ballot, "accepted ballot");
  if (r.U8(&has, "has value") && has > 1) r.Fail("bad value flag");
  out->accepted.reset();
  if (has == 1 && r.status().ok()) {
    auto d = std::make_shared<Decided>();
    if (GetDecided(r, d.get())) out->accepted = std::move(d);
  }
  return r.Finish();
}

std::string EncodeCheckpointHeader(const replication::SnapshotReply& h) {
  std::string o;
  PutU8(&o, kRecordVersion);
  PutU64(&o, h.at.epoch);
  PutU64(&o, h.at.ts);
  PutU32(&o, static_cast<uint32_t>(h.next_slot.size()));
  for (size_t t = 0; t < h.next_slot.size(); t++) {
    PutU64(&o, h.next_slot[t]);
    PutU64(&o, t < h.skip.size() ? h.skip[t] : 0);
    replication::LogKey k = t < h.stream_key.size() ? h.stream_key[t] : replication::LogKey{};
    PutU64(&o, k.epoch);
    PutU64(&o, k.ts);
    PutU64(&o, t < h.stream_barrier.size() ? h.stream_barrier[t] : 0);
  }
  PutU8(&o, h.decided ? 1 : 0);
  if (h.decided) PutDecided(&o, *h.decided);
  PutU64(&o, h.leader_epoch);
  return o;
}

Status DecodeCheckpointHeader(std::string_view in, replication::SnapshotReply* out) {
  ByteReader r(in, "checkpoint header");
  uint32_t n = 0;
  uint8_t has = 0;
  r.Version();
  r.U64(&out->at.epoch, "at epoch");
  r.U64(&out->at.ts, "at ts");
  if (r.Count(&n, 40, "streams")) {
    out->next_slot.resize(n);
    out->skip.resize(n);
    out->stream_key.resize(n);
    out->stream_barrier.resize(n);
    for (uint32_t t = 0; t < n; t++) {
      r.U64(&out->next_slot[t], "next slot");
      r.U64(&out->skip[t], "skip");
      r.U64(&out->stream_key[t].epoch, "stream key epoch");
      r.U64(&out->stream_key[t].ts, "stream key ts");
      r.U64(&out->stream_barrier[t], "stream barrier");
    }
  }
  if (r.U8(&has, "has decided") && has > 1) r.Fail("bad decided flag");
  out->decided.reset();
  if (has == 1 && r.status().ok()) {
    auto d = std::make_shared<Decided>();
    if (GetDecided(r, d.get())) out->decided = std::move(d);
  }
  r.U64(&out->leader_epoch, "leader epoch");
  return r.Finish();
}

void BeginWritesChunk(std::string* out) {
  out->clear();
  PutU8(out, kRecordVersion);
  PutU32(out, 0);
}

void AddToWritesChunk(std::string* out, uint32_t table, std::string_view key, std::string_view value) {
  PutU32(out, table);
  PutBytes(out, key);
  PutBytes(out, value);
}

void FinishWritesChunk(std::string* out, uint32_t count) {
  std::string c;
  PutU32(&c, count);
  out->replace(1, 4, c);
}

Status ForEachInWritesChunk(std::string_view in, const WriteVisitor& fn) {
  ByteReader r(in, "checkpoint writes");
  uint32_t n = 0;
  r.Version();
  if (r.Count(&n, 12, "writes")) {
    for (uint32_t i = 0; i < n; i++) {
      uint32_t table = 0;
      std::string_view k, v;
      r.U32(&table, "table");
      r.Bytes(&k, "key");
      if (!r.Bytes(&v, "value")) break;
      if (Status s = fn(table, k, v); !s.ok()) return s;
    }
  }
  return r.Finish();
}

Status DecodeWritesChunk(std::string_view in, std::vector<replication::SnapshotWrite>* out) {
  out->clear();
  Status s = ForEachInWritesChunk(in, [out](uint32_t table, std::string_view k, std::string_view v) {
    out->push_back(replication::SnapshotWrite{table, std::string(k), std::string(v)});
    return Status::OK();
  });
  if (!s.ok()) out->clear();
  return s;
}

std::string EncodeCheckpointEnd(const CheckpointEnd& e) {
  std::string o;
  PutU8(&o, kRecordVersion);
  PutU64(&o, e.writes);
  PutU64(&o, e.chunks);
  return o;
}

Status DecodeCheckpointEnd(std::string_view in, CheckpointEnd* out) {
  ByteReader r(in, "checkpoint end");
  r.Version();
  r.U64(&out->writes, "writes");
  r.U64(&out->chunks, "chunks");
  return r.Finish();
}

}  // namespace rolis::durability
