#include "wire.h"

#include "replication/membership.h"

namespace rolis::replication::wire {

void ToWire(LogKey k, v1::LogKey* out) {
  out->set_epoch(k.epoch);
  out->set_ts(k.ts);
}
LogKey FromWire(const v1::LogKey& k) { return LogKey{k.epoch(), k.ts()}; }

void ToWire(const Decided& d, v1::EpochRecord* out) {
  out->set_epoch(d.record.epoch);
  auto* cut = out->mutable_cut();
  cut->clear();
  for (auto [e, ts] : d.record.cut) (*cut)[e] = ts;
  out->set_leader_id(d.leader_id);
  ToWire(d.watermark, out->mutable_watermark());
  out->set_config(d.config);
  out->clear_members();
  for (const MemberAddr& m : d.members) {
    auto* w = out->add_members();
    w->set_id(m.id);
    w->set_address(m.address);
  }
}

DecidedPtr FromWire(const v1::EpochRecord& r) {
  if (r.epoch() == 0 && r.cut().empty()) return nullptr;
  auto d = std::make_shared<Decided>();
  d->record.epoch = r.epoch();
  for (const auto& [e, ts] : r.cut()) d->record.cut[e] = ts;
  d->leader_id = r.leader_id();
  d->watermark = FromWire(r.watermark());
  d->config = r.config();
  for (const auto& m : r.members()) d->members.push_back(MemberAddr{m.id(), m.address()});
  return d;
}

void ToWire(const Batch& b, v1::Batch* out, Payload payload) {
  switch (b.kind) {
    case BatchKind::kTxns: out->set_kind(v1::Batch::TXNS); break;
    case BatchKind::kNoop: out->set_kind(v1::Batch::NOOP); break;
    case BatchKind::kBarrier: out->set_kind(v1::Batch::BARRIER); break;
  }
  out->set_epoch(b.epoch);
  out->set_last_ts(b.last_ts);
  if (payload == Payload::kCopy) out->set_encoded(b.payload);
  out->set_txn_count(b.txn_count);
  out->set_crc32c(b.crc);
}

namespace {

// `payload` is w's encoded field, copied or moved out by the caller.
bool BatchFromWire(const v1::Batch& w, std::string payload, BatchPtr* out, std::string* error) {
  auto b = std::make_shared<Batch>();
  switch (w.kind()) {
    case v1::Batch::TXNS: b->kind = BatchKind::kTxns; break;
    case v1::Batch::NOOP: b->kind = BatchKind::kNoop; break;
    case v1::Batch::BARRIER: b->kind = BatchKind::kBarrier; break;
    default:
      *error = "batch of unknown kind " + std::to_string(w.kind());
      return false;
  }
  if (w.txns_size() > 0) {
    *error = "batch with txns: rolisd sends and accepts the encoded form only";
    return false;
  }
  b->epoch = w.epoch();
  b->last_ts = w.last_ts();
  b->payload = std::move(payload);
  b->txn_count = w.txn_count();
  b->crc = w.crc32c();
  *out = std::move(b);
  return true;
}

}  // namespace

bool FromWire(const v1::Batch& w, BatchPtr* out, std::string* error) {
  return BatchFromWire(w, w.encoded(), out, error);
}

bool FromWire(v1::Batch&& w, BatchPtr* out, std::string* error) {
  std::string payload = std::move(*w.mutable_encoded());
  return BatchFromWire(w, std::move(payload), out, error);
}

void ToWire(const AcceptMsg& m, v1::AcceptRequest* out, Payload payload) {
  out->set_epoch(m.epoch);
  out->set_stream(m.stream);
  auto* s = out->mutable_slot();
  s->set_index(m.slot.index);
  s->set_ballot(m.slot.ballot);
  if (m.slot.value) ToWire(*m.slot.value, s->mutable_value(), payload);
  ToWire(m.commit_watermark, out->mutable_commit_watermark());
  out->set_from(m.from);
  out->set_log_start(m.log_start);
  out->set_compact_below(m.compact_below);
  if (m.decided) ToWire(*m.decided, out->mutable_decided());
  out->set_leader_client_address(m.leader_client_address);
}

bool FromWire(v1::AcceptRequest&& r, AcceptMsg* out, std::string* error) {
  out->from = r.from();
  out->epoch = r.epoch();
  out->stream = r.stream();
  out->slot.index = r.slot().index();
  out->slot.ballot = r.slot().ballot();
  if (!r.has_slot() || !r.slot().has_value()) {
    *error = "accept without a slot value";
    return false;
  }
  if (!FromWire(std::move(*r.mutable_slot()->mutable_value()), &out->slot.value, error)) return false;
  out->commit_watermark = FromWire(r.commit_watermark());
  out->log_start = r.log_start();
  out->compact_below = r.compact_below();
  out->decided = r.has_decided() ? FromWire(r.decided()) : nullptr;
  out->leader_client_address = r.leader_client_address();
  return true;
}

void ToWire(const AcceptReply& r, v1::AcceptResponse* out) {
  out->set_ok(r.ok);
  out->set_promised_epoch(r.promised_epoch);
  out->set_stream(r.stream);
  out->set_slot_index(r.slot_index);
  out->set_member_id(r.from);
  out->set_need_from(r.need_from);
  out->set_held_from(r.held_from);
  out->set_replayed_next(r.replayed_next);
  out->set_first_slot(r.first_slot);
  out->set_catching_up(r.catching_up);
  out->set_error(r.error);
}

AcceptReply FromWire(const v1::AcceptResponse& w) {
  AcceptReply r;
  r.ok = w.ok();
  r.promised_epoch = w.promised_epoch();
  r.stream = w.stream();
  r.slot_index = w.slot_index();
  r.from = w.member_id();
  r.need_from = w.need_from();
  r.held_from = w.held_from();
  r.replayed_next = w.replayed_next();
  r.first_slot = w.first_slot();
  r.catching_up = w.catching_up();
  r.error = w.error();
  return r;
}

void ToWire(const PromiseMsg& m, v1::PromiseRequest* out) {
  out->set_epoch(m.epoch);
  out->set_candidate_id(m.from);
  out->set_peek(m.peek);
  out->clear_from_slot();
  for (uint64_t f : m.from_slot) out->add_from_slot(f);
}

PromiseMsg FromWire(const v1::PromiseRequest& r, uint32_t from) {
  PromiseMsg m;
  m.from = from != 0 ? from : r.candidate_id();
  m.epoch = r.epoch();
  m.peek = r.peek();
  // Checked by the acceptor (a list of another length, or on a real
  // Promise, is refused with a reason).
  m.from_slot.assign(r.from_slot().begin(), r.from_slot().end());
  return m;
}

void ToWire(const PromiseReply& r, v1::PromiseResponse* out) {
  out->set_ok(r.ok);
  out->set_promised_epoch(r.promised_epoch);
  out->set_member_id(r.from);
  out->set_amnesic(r.amnesic);
  out->set_virgin(r.virgin);
  out->set_error(r.error);
  if (r.decided) ToWire(*r.decided, out->mutable_decided());
  out->set_control_instance(r.ctl_instance);
  out->set_control_promised(r.ctl_promised);
  out->set_control_accepted_ballot(r.ctl_accepted_ballot);
  if (r.ctl_accepted) ToWire(*r.ctl_accepted, out->mutable_control_accepted());
  for (size_t t = 0; t < r.streams.size(); t++) {
    const StreamSlots& ss = r.streams[t];
    auto* w = out->add_streams();
    w->set_stream(static_cast<uint32_t>(t));
    w->set_first_slot(ss.first_slot);
    ToWire(ss.base_key, w->mutable_base_key());
    w->set_base_barrier(ss.base_barrier);
    for (const Slot& s : ss.slots) {
      auto* ws = w->add_slots();
      ws->set_index(s.index);
      ws->set_ballot(s.ballot);
      if (s.value) ToWire(*s.value, ws->mutable_value());
    }
  }
}

bool FromWire(const v1::PromiseResponse& w, PromiseReply* out, std::string* error) {
  out->ok = w.ok();
  out->promised_epoch = w.promised_epoch();
  out->from = w.member_id();
  out->amnesic = w.amnesic();
  out->virgin = w.virgin();
  out->error = w.error();
  out->decided = w.has_decided() ? FromWire(w.decided()) : nullptr;
  out->ctl_instance = w.control_instance();
  out->ctl_promised = w.control_promised();
  out->ctl_accepted_ballot = w.control_accepted_ballot();
  out->ctl_accepted = w.has_control_accepted() ? FromWire(w.control_accepted()) : nullptr;
  out->streams.clear();
  for (const auto& ws : w.streams()) {
    if (ws.stream() != out->streams.size()) {
      *error = "promise reply with streams out of order";
      return false;
    }
    StreamSlots ss;
    ss.first_slot = ws.first_slot();
    ss.base_key = FromWire(ws.base_key());
    ss.base_barrier = ws.base_barrier();
    for (const auto& s : ws.slots()) {
      Slot slot{s.index(), s.ballot(), nullptr};
      if (!FromWire(s.value(), &slot.value, error)) return false;
      ss.slots.push_back(std::move(slot));
    }
    out->streams.push_back(std::move(ss));
  }
  return true;
}

void ToWire(const ControlMsg& m, v1::ControlRequest* out) {
  switch (m.kind) {
    case ControlMsg::Kind::kPrepare: out->set_kind(v1::ControlRequest::PREPARE); break;
    case ControlMsg::Kind::kAccept: out->set_kind(v1::ControlRequest::ACCEPT); break;
    case ControlMsg::Kind::kLearn: out->set_kind(v1::ControlRequest::LEARN); break;
    case ControlMsg::Kind::kQuery: out->set_kind(v1::ControlRequest::QUERY); break;
  }
  out->set_from(m.from);
  out->set_instance(m.instance);
  out->set_ballot(m.ballot);
  if (m.value) ToWire(*m.value, out->mutable_value());
  if (m.prev) ToWire(*m.prev, out->mutable_prev());
}

bool FromWire(const v1::ControlRequest& r, ControlMsg* out, std::string* error) {
  switch (r.kind()) {
    case v1::ControlRequest::PREPARE: out->kind = ControlMsg::Kind::kPrepare; break;
    case v1::ControlRequest::ACCEPT: out->kind = ControlMsg::Kind::kAccept; break;
    case v1::ControlRequest::LEARN: out->kind = ControlMsg::Kind::kLearn; break;
    case v1::ControlRequest::QUERY: out->kind = ControlMsg::Kind::kQuery; break;
    default:
      *error = "control request of unknown kind";
      return false;
  }
  out->from = r.from();
  out->instance = r.instance();
  out->ballot = r.ballot();
  out->value = r.has_value() ? FromWire(r.value()) : nullptr;
  out->prev = r.has_prev() ? FromWire(r.prev()) : nullptr;
  if ((out->kind == ControlMsg::Kind::kAccept || out->kind == ControlMsg::Kind::kLearn) && !out->value) {
    *error = "control accept or learn without a value";
    return false;
  }
  // The instance after record r decides a record newer than r.
  if (out->value && InstanceAfter(out->value.get()) <= out->instance && out->kind == ControlMsg::Kind::kAccept) {
    *error = "control value not newer than the record its instance follows";
    return false;
  }
  return true;
}

void ToWire(const ControlReply& r, v1::ControlResponse* out) {
  out->set_ok(r.ok);
  out->set_from(r.from);
  out->set_promised(r.promised);
  out->set_accepted_ballot(r.accepted_ballot);
  if (r.accepted) ToWire(*r.accepted, out->mutable_accepted());
  if (r.latest) ToWire(*r.latest, out->mutable_latest());
  out->set_error(r.error);
}

ControlReply FromWire(const v1::ControlResponse& w) {
  ControlReply r;
  r.ok = w.ok();
  r.from = w.from();
  r.promised = w.promised();
  r.accepted_ballot = w.accepted_ballot();
  r.accepted = w.has_accepted() ? FromWire(w.accepted()) : nullptr;
  r.latest = w.has_latest() ? FromWire(w.latest()) : nullptr;
  r.error = w.error();
  return r;
}

}  // namespace rolis::replication::wire
