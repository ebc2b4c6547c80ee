// Status: an error code plus an optional message. OK allocates nothing.
#pragma once

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace trove {

enum class StatusCode { kOk = 0, kInvalidArgument, kIoError, kNotFound, kResourceExhausted,
                        kFailedPrecondition, kInternal };

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string_view msg)
      : rep_(code == StatusCode::kOk ? nullptr : new Rep{code, std::string(msg)}) {}
  Status(const Status& o) : rep_(o.rep_ ? new Rep(*o.rep_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) rep_.reset(o.rep_ ? new Rep(*o.rep_) : nullptr);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Ok() { return Status(); }
  static Status Invalid(std::string_view m) { return Status(StatusCode::kInvalidArgument, m); }
  static Status Internal(std::string_view m) { return Status(StatusCode::kInternal, m); }
  // Copies errno at the failing syscall: "<op>: <strerror>".
  static Status FromErrno(std::string_view op, int err = errno) {
    std::string m(op);
    m += ": ";
    m += std::strerror(err);
    return Status(StatusCode::kIoError, m);
  }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  std::string_view message() const { return rep_ ? std::string_view(rep_->msg) : std::string_view(); }
  std::string ToString() const { return ok() ? std::string("OK") : rep_->msg; }

 private:
  struct Rep {
    StatusCode code;
    std::string msg;
  };
  std::unique_ptr<Rep> rep_;
};

}  // namespace trove
