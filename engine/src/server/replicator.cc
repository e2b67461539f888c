#include "server/replicator.h"

#include <algorithm>

#include "core/clock.h"

namespace rolis::server {

v1::Role RoleProto(Role r) {
  switch (r) {
    case Role::kStandalone: return v1::STANDALONE;
    case Role::kLeader: return v1::LEADER;
    case Role::kFollower: return v1::FOLLOWER;
    case Role::kCandidate: return v1::CANDIDATE;
    case Role::kCatchingUp: return v1::CATCHING_UP;
  }
  return v1::ROLE_UNSPECIFIED;
}

namespace {
const grpc::Status kNotConfigured(grpc::StatusCode::UNIMPLEMENTED,
                                  "replication not configured: this node runs without replication "
                                  "(start rolisd with --peers to replicate)");
}  // namespace

StandaloneReplicator::StandaloneReplicator(Options options)
    : options_(std::move(options)),
      clock_base_nanos_(core::MonotonicNanos()),
      streams_(new StreamState[std::max(1u, options_.streams)]) {
  for (size_t i = 0; i < kMaxWorkerIds; i++) stream_of_worker_[i].store(i % std::max(1u, options_.streams));
}

void StandaloneReplicator::RegisterStream(WorkerId worker, uint32_t stream) {
  if (worker < kMaxWorkerIds && stream < options_.streams) stream_of_worker_[worker].store(stream);
}

StandaloneReplicator::StreamState& StandaloneReplicator::StreamOf(WorkerId worker) {
  uint32_t s = worker < kMaxWorkerIds ? stream_of_worker_[worker].load(std::memory_order_relaxed)
                                      : worker % options_.streams;
  return streams_[s];
}

void StandaloneReplicator::OnCommit(WorkerId worker, uint64_t commit_ts, const CommittedWrites&) {
  // Called with the worker held by one thread: plain store of a larger value.
  StreamState& s = StreamOf(worker);
  if (commit_ts > s.committed_ts.load(std::memory_order_relaxed)) {
    s.committed_ts.store(commit_ts, std::memory_order_relaxed);
  }
  s.txns.store(s.txns.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

uint64_t StandaloneReplicator::watermark_ts() const {
  // Everything committed is as durable as it gets on one node: G is the
  // newest commit timestamp of any stream.
  uint64_t g = 0;
  for (uint32_t i = 0; i < options_.streams; i++) g = std::max(g, streams_[i].committed_ts.load());
  return g;
}

Replicator::ReplicationLag StandaloneReplicator::replication_lag() const {
  ReplicationLag out;
  // Nothing to replay on one node. A member waiting for its peers (epoch 0)
  // has no G.
  if (epoch() == 0) return out;
  out.stream_lag_seconds.assign(options_.streams, 0.0);
  if (uint64_t g = watermark_ts(); g != 0) out.watermark_mono_ns = static_cast<int64_t>(clock_base_nanos_ + (g >> 8));
  return out;
}

void StandaloneReplicator::FillStatus(v1::StatusResponse* out) const {
  out->set_id(options_.id);
  out->set_role(RoleProto(role()));
  out->set_epoch(epoch());
  out->set_promised_epoch(epoch());
  uint64_t g = watermark_ts();
  out->mutable_watermark()->set_epoch(epoch());
  out->mutable_watermark()->set_ts(g);
  out->mutable_replayed()->set_epoch(epoch());
  out->mutable_replayed()->set_ts(g);
  for (uint32_t i = 0; i < options_.streams; i++) {
    auto* s = out->add_streams();
    s->set_stream(i);
    // No log on a standalone node: a "slot" is a committed transaction.
    uint64_t n = streams_[i].txns.load();
    s->set_first_slot(0);
    s->set_next_slot(n);
    s->set_committed_slot(n);
    s->mutable_committed_key()->set_epoch(epoch());
    s->mutable_committed_key()->set_ts(streams_[i].committed_ts.load());
    *s->mutable_replayed_key() = s->committed_key();
  }
  if (!options_.peers_configured) {
    out->set_leader_id(options_.id);
    out->set_leader_address(options_.client_address);
    auto* d = out->mutable_decided();
    d->set_epoch(1);
    d->set_leader_id(options_.id);
    d->mutable_watermark()->set_epoch(0);
    d->mutable_watermark()->set_ts(0);
  }
  for (const auto& m : options_.members) *out->add_members() = m;
}

grpc::Status StandaloneReplicator::PrepareFailover(const v1::PrepareFailoverRequest&, v1::PrepareFailoverResponse*) {
  return kNotConfigured;
}
grpc::Status StandaloneReplicator::DecideEpoch(const v1::DecideEpochRequest&, v1::DecideEpochResponse*) {
  return kNotConfigured;
}
grpc::Status StandaloneReplicator::OpenEpoch(const v1::OpenEpochRequest&, v1::OpenEpochResponse*) {
  return kNotConfigured;
}
grpc::Status StandaloneReplicator::AnnounceLeader(const v1::AnnounceLeaderRequest&, v1::AnnounceLeaderResponse*) {
  return kNotConfigured;
}
grpc::Status StandaloneReplicator::ChangeMembership(const v1::ChangeMembershipRequest&,
                                                    v1::ChangeMembershipResponse*) {
  return kNotConfigured;
}

}  // namespace rolis::server
