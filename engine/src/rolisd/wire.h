// Conversions between the replication types (types.h) and the wire messages
// of proto/rolis/v1/replication.proto. FromWire functions validate the
// shape of what arrived (kinds, lengths); the Replica validates the rest.
#pragma once

#include <string>

#include "rolis/v1/admin.pb.h"
#include "rolis/v1/replication.pb.h"
#include "replication/types.h"

namespace rolis::replication::wire {

void ToWire(LogKey k, v1::LogKey* out);
LogKey FromWire(const v1::LogKey& k);

void ToWire(const Decided& d, v1::EpochRecord* out);
DecidedPtr FromWire(const v1::EpochRecord& r);  // null when r has epoch 0 and no cut

// kOmit leaves out a batch's payload (`encoded`): AcceptFrame sends it apart.
enum class Payload { kCopy, kOmit };

void ToWire(const Batch& b, v1::Batch* out, Payload payload = Payload::kCopy);
// False (with *error) when the kind is unknown.
bool FromWire(const v1::Batch& b, BatchPtr* out, std::string* error);
bool FromWire(v1::Batch&& b, BatchPtr* out, std::string* error);  // moves the payload out

void ToWire(const AcceptMsg& m, v1::AcceptRequest* out, Payload payload = Payload::kCopy);
// Moves the payload out of r (a follower receives every batch once: no copy).
bool FromWire(v1::AcceptRequest&& r, AcceptMsg* out, std::string* error);
void ToWire(const AcceptReply& r, v1::AcceptResponse* out);
AcceptReply FromWire(const v1::AcceptResponse& r);

void ToWire(const PromiseMsg& m, v1::PromiseRequest* out);
PromiseMsg FromWire(const v1::PromiseRequest& r, uint32_t from);
void ToWire(const PromiseReply& r, v1::PromiseResponse* out);
bool FromWire(const v1::PromiseResponse& r, PromiseReply* out, std::string* error);

void ToWire(const ControlMsg& m, v1::ControlRequest* out);
bool FromWire(const v1::ControlRequest& r, ControlMsg* out, std::string* error);
void ToWire(const ControlReply& r, v1::ControlResponse* out);
ControlReply FromWire(const v1::ControlResponse& r);

}  // namespace rolis::replication::wire
