#include "snapshot_chunks.h"

#include "wire.h"

namespace rolis::replication {

Status SnapshotChunkSink::Begin(const SnapshotReply& header) {
  if (begun_) return Status::FailedPrecondition("snapshot already begun");
  begun_ = true;
  chunk_.Clear();
  chunk_.set_ok(true);
  wire::ToWire(header.at, chunk_.mutable_at());
  if (header.decided) wire::ToWire(*header.decided, chunk_.mutable_decided());
  chunk_.set_leader_epoch(header.leader_epoch);
  for (uint64_t v : header.next_slot) chunk_.add_next_slot(v);
  for (uint64_t v : header.skip) chunk_.add_skip(v);
  for (uint64_t v : header.stream_barrier) chunk_.add_stream_barrier(v);
  for (LogKey k : header.stream_key) wire::ToWire(k, chunk_.add_stream_key());
  return Status::OK();
}

Status SnapshotChunkSink::Add(uint32_t table, std::string_view key, std::string_view value) {
  if (!begun_) return Status::FailedPrecondition("snapshot not begun");
  v1::LogWrite* w = chunk_.add_writes();
  w->set_table(table);
  w->set_key(key.data(), key.size());
  w->set_value(value.data(), value.size());
  bytes_ += key.size() + value.size() + 16;
  if (bytes_ > chunk_bytes_) return Flush();
  return Status::OK();
}

Status SnapshotChunkSink::End() {
  if (!begun_) return Status::FailedPrecondition("snapshot not begun");
  chunk_.set_last(true);
  return Flush();
}

Status SnapshotChunkSink::Flush() {
  if (!write_(chunk_)) return Status(StatusCode::kInternal, "unavailable: snapshot reader went away");
  chunks_++;
  chunk_.Clear();
  bytes_ = 0;
  return Status::OK();
}

bool SnapshotChunkSink::Refuse(const std::string& why) {
  if (begun_) return false;
  chunk_.Clear();
  chunk_.set_ok(false);
  chunk_.set_error(why);
  chunk_.set_last(true);
  return Flush().ok();
}

}  // namespace rolis::replication
