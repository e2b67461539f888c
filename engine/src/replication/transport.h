// The transport between members, behind an interface so that tests can drop,
// delay, duplicate, reorder and partition messages deterministically
// (fault_transport.h) and rolisd uses gRPC (grpc_transport.h).
//
// Accepts are one-way and asynchronous: the leader sends them on the stream's
// connection to a peer and the peer's AcceptReply comes back later through
// ReplicaHandler::OnAcceptReply. Promise, Control and Snapshot are calls
// with a deadline. Every message carries its sender's epoch; the receiver
// validates what it gets (bad input is answered with an error and changes
// nothing).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rolis/status.h"
#include "snapshot_sink.h"
#include "types.h"

namespace rolis::replication {

// An accept that HandleAccept took, as SettleAccepts needs it.
struct AcceptedRef {
  uint32_t stream = 0;
  uint64_t epoch = 0;
  uint64_t log_start = 0;
};

// What a member serves to its peers (implemented by Replica).
class ReplicaHandler {
 public:
  virtual ~ReplicaHandler() = default;
  virtual AcceptReply HandleAccept(const AcceptMsg& m) = 0;
  virtual PromiseReply HandlePromise(const PromiseMsg& m) = 0;
  virtual ControlReply HandleControl(const ControlMsg& m) = 0;
  // The snapshot goes into `sink` as it is produced (snapshot_sink.h). OK
  // once the sink's End returned OK; else why not (a refusal before Begin,
  // or a scan, read or sink error after it).
  virtual Status HandleSnapshot(const SnapshotMsg& m, SnapshotSink* sink) = 0;
  // After a group of accepts taken together (the frames a connection had
  // buffered), before their replies go out: with durability, waits once
  // until what they accepted is durable and refreshes each reply's
  // need_from (group commit over pipelined batches: docs/replication.md,
  // "Durability"). replies[i] answers accepted[i]. Default: nothing.
  virtual void SettleAccepts(const std::vector<AcceptedRef>& accepted, std::vector<AcceptReply>* replies) {}
  // The reply to an Accept this member sent.
  virtual void OnAcceptReply(uint32_t peer, const AcceptReply& r) = 0;
  // The connection of stream `stream` to `peer` was (re)established or
  // broken: what was in flight may be lost; the sender resends.
  virtual void OnLinkReset(uint32_t peer, uint32_t stream) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Called once before any send: where replies and resets go.
  virtual void Bind(ReplicaHandler* local) = 0;
  virtual void Start() {}
  virtual void Stop() {}
  // A member learned from a configuration (a membership change): from now
  // on it can be called. Transports that reach every member already ignore it.
  virtual void AddPeer(uint32_t id, const std::string& address) {}

  // Fire and forget; FIFO per (peer, stream) unless faults reorder.
  virtual void SendAccept(uint32_t peer, const AcceptMsg& m) = 0;
  // How many accepts are queued and not yet written to `peer` on `stream`
  // (the sender's flow control keeps it bounded).
  virtual size_t Queued(uint32_t peer, uint32_t stream) const { return 0; }

  virtual Status Promise(uint32_t peer, const PromiseMsg& m, PromiseReply* r, std::chrono::milliseconds timeout) = 0;
  virtual Status Control(uint32_t peer, const ControlMsg& m, ControlReply* r, std::chrono::milliseconds timeout) = 0;
  // The peer's snapshot into `sink` as it arrives: OK once the sink's End
  // returned OK. A refusal of the peer, a broken call or an error of the
  // sink (which stops the peer's scan) is returned as an error. `timeout`
  // bounds the wait for each part, not the whole: a store of any size
  // streams while it moves.
  virtual Status Snapshot(uint32_t peer, const SnapshotMsg& m, SnapshotSink* sink,
                          std::chrono::milliseconds timeout) = 0;
};

}  // namespace rolis::replication
