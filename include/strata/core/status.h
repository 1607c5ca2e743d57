// Status: the outcome of an operation that returns no value.
//
// Modelled on leveldb's Status: a code plus a human-readable message that says
// what was wrong and what to do. An OK status carries no allocation. Status is a
// value type; copies are cheap and thread-compatible (no shared mutable state).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace strata {

enum class StatusCode : int {
  kOk = 0,
  kNotFound,
  kAlreadyExists,
  kInvalidArgument,
  kPreconditionFailed,
  kIOError,
  kCorruption,
  kUnavailable,
  kNotSupported,
  kPermissionDenied,
  kResourceExhausted,
  kInternal,
  kConflict,  // a concurrent update won a race (S3: 409 ConditionalRequestConflict)
};

// Short name of a code ("NotFound"), for logs and error bodies.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status PreconditionFailed(std::string m) {
    return {StatusCode::kPreconditionFailed, std::move(m)};
  }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status NotSupported(std::string m) { return {StatusCode::kNotSupported, std::move(m)}; }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status Conflict(std::string m) { return {StatusCode::kConflict, std::move(m)}; }

  // Builds an IOError from errno, naming the operation and the path.
  static Status FromErrno(int err, std::string_view what);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }

  // "NotFound: bucket \"x\" does not exist"
  std::string ToString() const;

  // Prefixes the message with context, keeping the code (and the detail).
  Status WithContext(std::string_view context) const;

  // A small integer an edge of the system attaches for itself, 0 by default;
  // the HTTP frontends keep the exact HTTP status of a protocol error here
  // (http::ProtocolError). It lives in the padding after the code: a Status
  // stays the same size.
  Status WithDetail(int32_t detail) const {
    Status s = *this;
    s.detail_ = detail;
    return s;
  }
  int32_t detail() const { return detail_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  int32_t detail_ = 0;
  std::string message_;
};

}  // namespace strata

#define STRATA_RETURN_IF_ERROR(expr)          \
  do {                                        \
    ::strata::Status _strata_st = (expr);     \
    if (!_strata_st.ok()) return _strata_st;  \
  } while (0)
