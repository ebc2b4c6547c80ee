// Result<T>: a value or a non-OK Status (g++ 12 has no std::expected in C++20).
#pragma once

#include <optional>
#include <utility>

#include "common/check.h"
#include "common/status.h"

namespace trove {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { CHECK(!status_.ok()); }  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { CHECK(ok()); return *value_; }
  const T& value() const& { CHECK(ok()); return *value_; }
  T&& value() && { CHECK(ok()); return std::move(*value_); }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace trove
