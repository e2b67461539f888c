// libFuzzer target: the validation of client requests in the server
// (server/node.h: Node checks every request before it touches the engine).
// The input's first byte picks the path, the rest is an ExecuteRequest:
//   even: Node::Execute (one-shot transaction) as decoded;
//   odd:  an interactive transaction: Begin, then each op as a Get, Put,
//         Delete or Scan request with the op's fields, then Commit (or
//         Abort when the second byte is odd).
// The node runs on a real engine (Database::Open) with a standalone
// replicator. Checks: no crash, and every refusal is one of the codes
// client.proto names, with a message.
#include <grpcpp/support/status.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "rolis/db.h"
#include "server/metrics.h"
#include "server/node.h"
#include "server/replicator.h"

using namespace rolis;
using namespace rolis::server;

namespace {

void Require(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "request_validation_fuzz: %s\n", what);
    abort();
  }
}

void RequireClear(const grpc::Status& st) {
  if (st.ok()) return;
  switch (st.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::FAILED_PRECONDITION:
      Require(!st.error_message().empty(), "a refusal without a message");
      return;
    default:
      fprintf(stderr, "code %d: %s\n", st.error_code(), st.error_message().c_str());
      Require(false, "a refusal with a code client.proto does not name");
  }
}

// A node over a fresh engine; replaced every kRunsPerNode inputs so that the
// store (which keeps what the inputs wrote) stays small.
struct Member {
  static constexpr int kRunsPerNode = 20000;
  Metrics metrics{"fuzz"};
  std::unique_ptr<StandaloneReplicator> replicator;
  std::unique_ptr<Database> db;
  std::unique_ptr<Node> node;
  int runs = 0;

  Member() {
    StandaloneReplicator::Options ro;
    ro.client_address = "127.0.0.1:7070";
    replicator = std::make_unique<StandaloneReplicator>(ro);
    Options opts;
    opts.commit_hook = replicator.get();
    db = Database::Open(opts);
    NodeOptions o;
    o.tables = {"kv", "other"};
    o.max_value_bytes = 4096;
    o.max_ops_per_txn = 64;
    o.max_open_txns = 16;
    node = std::make_unique<Node>(o, db.get(), replicator.get(), &metrics);
    Require(node->Start(1).ok(), "node start");
  }
  ~Member() {
    node->Stop();
    node.reset();
    db.reset();
  }
};
std::unique_ptr<Member> member;

template <typename Req, typename Resp>
grpc::Status Call(grpc::Status (Node::*fn)(const Req&, Resp*, CallContext*), const Req& req) {
  Resp resp;
  CallContext ctx;
  return (member->node.get()->*fn)(req, &resp, &ctx);
}

void Interactive(const v1::ExecuteRequest& req, bool abort_at_end) {
  v1::BeginRequest begin;
  v1::BeginResponse began;
  CallContext ctx;
  grpc::Status st = member->node->Begin(begin, &began, &ctx);
  RequireClear(st);
  if (!st.ok()) return;
  const uint64_t id = began.txn_id();
  for (const v1::Op& op : req.ops()) {
    switch (op.kind()) {
      case v1::Op::GET: {
        v1::GetRequest r;
        r.set_txn_id(id);
        r.set_table(op.table());
        r.set_key(op.key());
        RequireClear(Call(&Node::Get, r));
        break;
      }
      case v1::Op::PUT:
      case v1::Op::PUT_IF: {
        v1::PutRequest r;
        r.set_txn_id(id);
        r.set_table(op.table());
        r.set_key(op.key());
        r.set_value(op.value());
        RequireClear(Call(&Node::Put, r));
        break;
      }
      case v1::Op::DELETE: {
        v1::DeleteRequest r;
        r.set_txn_id(id);
        r.set_table(op.table());
        r.set_key(op.key());
        RequireClear(Call(&Node::Delete, r));
        break;
      }
      default: {
        v1::ScanRequest r;
        r.set_txn_id(id);
        r.set_table(op.table());
        r.set_start_key(op.key());
        r.set_end_key(op.end_key());
        r.set_limit(op.limit());
        RequireClear(Call(&Node::Scan, r));
        break;
      }
    }
  }
  if (abort_at_end) {
    v1::AbortRequest r;
    r.set_txn_id(id);
    RequireClear(Call(&Node::Abort, r));
  } else {
    v1::CommitRequest r;
    r.set_txn_id(id);
    RequireClear(Call(&Node::Commit, r));
  }
  // Whatever happened, the transaction is over: its id is unknown now.
  v1::AbortRequest again;
  again.set_txn_id(id);
  Require(Call(&Node::Abort, again).error_code() == grpc::StatusCode::NOT_FOUND, "a finished transaction lives on");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  v1::ExecuteRequest req;
  if (!req.ParseFromArray(data + 2, static_cast<int>(size - 2))) return 0;
  if (!member || ++member->runs > Member::kRunsPerNode) {
    member.reset();
    member = std::make_unique<Member>();
  }
  if (req.max_retries() > 3) req.set_max_retries(3);  // bounded work per input
  if (data[0] % 2 == 0) {
    RequireClear(Call(&Node::Execute, req));
  } else {
    Interactive(req, data[1] % 2 == 1);
  }
  return 0;
}
