// Status and StatusOr<T>: the error model of the engine. No exception crosses the engine API; every
// fallible call returns one of these, with a code (abseil's names) and a message for a human.
#ifndef MM_ENGINE_STATUS_H_
#define MM_ENGINE_STATUS_H_

#include <cassert>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace mm {

// Error categories, named and numbered as in absl::StatusCode.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kNotFound = 5,
  kAlreadyExists = 6,
  kFailedPrecondition = 9,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kDataLoss = 15,
  kResourceExhausted = 8,
};

// Returns the abseil-style name of `code`, e.g. "INVALID_ARGUMENT".
std::string_view StatusCodeName(StatusCode code);

// The outcome of an operation: OK, or a code and a message saying what went wrong and where.
class [[nodiscard]] Status {
 public:
  // An OK status.
  Status() = default;
  // A status with `code`; `message` is ignored for kOk.
  Status(StatusCode code, std::string message);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "OK" or "<CODE_NAME>: <message>".
  std::string ToString() const;

  // Returns a copy whose message is `prefix` + ": " + message (no-op on OK). For adding context
  // ("while reading input_0.pb") as an error travels up.
  Status WithContext(std::string_view prefix) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

// Returns an OK status.
inline Status OkStatus() { return Status(); }
// Shorthands for building errors, as in abseil.
Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status FailedPreconditionError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status DataLossError(std::string message);
Status ResourceExhaustedError(std::string message);
Status CancelledError(std::string message);

// Either a value of type T or a non-OK Status explaining why there is none.
template <class T>
class [[nodiscard]] StatusOr {
 public:
  // Holds `status`, which must not be OK (an OK status without a value becomes kInternal).
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design.
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "StatusOr built from an OK status");
  }
  // Holds `value`.
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design.

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  // Access to the value; only valid when ok().
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T& value() & {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace mm

#define MM_STATUS_CONCAT_INNER_(a, b) a##b
#define MM_STATUS_CONCAT_(a, b) MM_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (a Status); returns it from the enclosing function when not OK.
#define MM_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::mm::Status mm_status_ = (expr);        \
    if (!mm_status_.ok()) return mm_status_; \
  } while (false)

// Evaluates `rexpr` (a StatusOr<T>); returns its status when not OK, else moves the value into
// `lhs` (a declaration such as `auto x` or an existing variable).
#define MM_ASSIGN_OR_RETURN(lhs, rexpr) \
  MM_ASSIGN_OR_RETURN_IMPL_(MM_STATUS_CONCAT_(mm_statusor_, __LINE__), lhs, rexpr)
#define MM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr)    \
  auto statusor = (rexpr);                                 \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // MM_ENGINE_STATUS_H_
