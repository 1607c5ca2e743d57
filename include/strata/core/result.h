// Result<T>: a value or a non-OK Status.
//
// Uses std::expected's member names (has_value, value, error, operator*,
// explicit operator bool) so it can become std::expected<T, Status> later.
// Constructing a Result from an OK Status is a programming error (asserts).
#pragma once

#include <cassert>
#include <optional>
#include <utility>

#include <strata/core/status.h>

namespace strata {

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "Result constructed from an OK status");
    if (status_.ok()) status_ = Status::Internal("Result constructed from an OK status");
  }

  bool has_value() const { return value_.has_value(); }
  explicit operator bool() const { return has_value(); }
  bool ok() const { return has_value(); }

  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

  // The error; OK when a value is held.
  const Status& error() const { return status_; }
  Status status() const { return status_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace strata

#define STRATA_CONCAT_INNER_(a, b) a##b
#define STRATA_CONCAT_(a, b) STRATA_CONCAT_INNER_(a, b)
#define STRATA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.has_value()) return tmp.error();           \
  lhs = std::move(*tmp)
#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL_(STRATA_CONCAT_(_strata_res_, __LINE__), lhs, expr)
