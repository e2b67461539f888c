#include "server/call_outcome.h"

#include <spdlog/spdlog.h>

#include <string>
#include <thread>

#include "server/logging.h"

namespace rolis::server {

grpc::Status Unacknowledged(const std::string& why) {
  return grpc::Status(grpc::StatusCode::UNKNOWN,
                      "outcome unknown: the transaction committed on this member but replication did not "
                      "acknowledge it (" +
                          why + "); it may or may not survive a failover");
}

void NoteStatus(Method method, const grpc::Status& st) {
  switch (st.error_code()) {
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::DATA_LOSS:
      LogErrorClass(std::string(MethodName(method)) + "/INTERNAL", st.error_message());
      break;
    default:
      if (!st.ok()) SPDLOG_DEBUG("{}: {} {}", MethodName(method), static_cast<int>(st.error_code()), st.error_message());
      break;
  }
}

void SetStreamError(v1::ExecuteResponse* resp, const grpc::Status& st) {
  uint64_t seq = resp->seq();
  resp->Clear();
  resp->set_seq(seq);
  resp->set_error_code(st.error_code());
  resp->set_error_message(st.error_message());
}

bool PendingAcks::Await(std::chrono::steady_clock::time_point deadline) const {
  while (count() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace rolis::server
