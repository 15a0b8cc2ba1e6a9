// Status values for the runtime: every failure on user data, a plan or a
// request is reported as a Status with a message, never an abort.
#pragma once

#include <string>
#include <utility>

namespace kiln {

enum class StatusCode { kOk = 0, kInvalidArgument, kNotFound, kDataLoss, kUnimplemented, kInternal,
                        kResourceExhausted };

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }
  // Prefixes context, e.g. "op 'attn/MatMul' (matmul): " + message.
  Status WithContext(const std::string &context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or an error.
template <typename T> class [[nodiscard]] StatusOr {
public:
  StatusOr(T value) : value_(std::move(value)) {}
  StatusOr(Status status) : status_(std::move(status)) {}
  bool ok() const { return status_.ok(); }
  const Status &status() const { return status_; }
  T &value() { return value_; }
  const T &value() const { return value_; }
  T &operator*() { return value_; }
  const T &operator*() const { return value_; }
  T *operator->() { return &value_; }
  const T *operator->() const { return &value_; }

private:
  Status status_;
  T value_{};
};

}  // namespace kiln

#define KILN_CONCAT_INNER(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_INNER(a, b)

#define KILN_RETURN_IF_ERROR(expr)                                                                 \
  do {                                                                                             \
    ::kiln::Status _kiln_st = (expr);                                                              \
    if (!_kiln_st.ok()) return _kiln_st;                                                           \
  } while (0)

#define KILN_ASSIGN_OR_RETURN(lhs, expr)                                                           \
  auto KILN_CONCAT(_kiln_so_, __LINE__) = (expr);                                                  \
  if (!KILN_CONCAT(_kiln_so_, __LINE__).ok()) return KILN_CONCAT(_kiln_so_, __LINE__).status();    \
  lhs = std::move(KILN_CONCAT(_kiln_so_, __LINE__).value())
