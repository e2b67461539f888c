// Status: the result of every engine operation that can fail. The engine never
// throws across its public API; callers branch on code().
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace rolis {

enum class StatusCode : int {
  kOk = 0,
  kNotFound,            // key absent (Get/Delete) or unknown table
  kAlreadyExists,       // Insert of a present key, CreateTable of a present name
  kAborted,             // OCC conflict: retryable, the caller retries with backoff
  kInvalidArgument,     // key/value over the limits, empty key, bad name
  kFailedPrecondition,  // misuse: operation on a finished transaction, write in read-only txn
  kResourceExhausted,   // a configured limit other than size (e.g. write set too large)
  kInternal,
};

// Short stable name, e.g. "ABORTED"; used in metrics labels and logs.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) { return {StatusCode::kAlreadyExists, std::move(msg)}; }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  static Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status FailedPrecondition(std::string msg) { return {StatusCode::kFailedPrecondition, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) { return {StatusCode::kResourceExhausted, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }
  bool IsAborted() const { return code_ == StatusCode::kAborted; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;  // "ABORTED: read validation failed"

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace rolis
