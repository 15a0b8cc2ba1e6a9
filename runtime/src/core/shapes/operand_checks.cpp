#include "core/shapes/operand_checks.h"

#include <limits>
#include <set>

namespace kiln {

Status OpError(std::string_view op, const std::string &message) {
  return InvalidArgument(std::string(op) + ": " + message);
}

Status CheckArity(std::string_view op, const Inputs &in, size_t required, size_t max_in,
                  const Outputs &out, size_t min_out, size_t max_out) {
  if (in.size() < required || in.size() > max_in) {
    const std::string expected = required == max_in
                                     ? std::to_string(required)
                                     : std::to_string(required) + " to " + std::to_string(max_in);
    return OpError(op, "expected " + expected + " operands, got " + std::to_string(in.size()));
  }
  for (size_t i = 0; i < required; ++i)
    if (in[i] == nullptr)
      return OpError(op, "operand " + std::to_string(i) + " is required but absent");
  if (out.size() < min_out || out.size() > max_out) {
    const std::string expected = min_out == max_out
                                     ? std::to_string(min_out)
                                     : std::to_string(min_out) + " to " + std::to_string(max_out);
    return OpError(op, "expected " + expected + " results, got " + std::to_string(out.size()));
  }
  return Status::Ok();
}

Status CheckDType(std::string_view op, const char *name, const TensorView &t,
                  std::initializer_list<DType> allowed) {
  std::string names;
  for (DType d : allowed) {
    if (d == t.dtype)
      return Status::Ok();
    names += names.empty() ? "" : ", ";
    names += DTypeName(d);
  }
  return OpError(op, std::string("operand '") + name + "' must be one of {" + names + "}, got " +
                         DTypeName(t.dtype));
}

Status CheckSameDType(std::string_view op, const TensorView &a, const TensorView &b) {
  if (a.dtype == b.dtype)
    return Status::Ok();
  return OpError(op, std::string("operands must have the same dtype, got ") + DTypeName(a.dtype) +
                         " and " + DTypeName(b.dtype));
}

StatusOr<std::vector<int64_t>> ReadInts(std::string_view op, const char *name,
                                        const TensorView &t) {
  if (t.dtype != DType::kI64 && t.dtype != DType::kI32)
    return OpError(op, std::string("operand '") + name + "' must be i64 or i32, got " +
                           DTypeName(t.dtype));
  // An empty operand has no values to wait for (and may have no buffer).
  if (t.data == nullptr && t.numel() != 0)
    return OpError(op, "shape of " + std::string(op) +
                           " depends on values not known before execution (operand '" + name +
                           "')");
  const int64_t n = t.numel();
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[i] = t.dtype == DType::kI64 ? t.as<const int64_t>()[i] : t.as<const int32_t>()[i];
  return values;
}

StatusOr<int64_t> ReadScalarInt(std::string_view op, const char *name, const TensorView &t) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInts(op, name, t));
  if (v.size() != 1)
    return OpError(op, std::string("operand '") + name + "' must hold one value, got shape " +
                           ShapeToString(t.shape));
  return v[0];
}

StatusOr<int64_t> NormalizeAxis(std::string_view op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return OpError(op, "axis " + std::to_string(axis) + " is out of range for rank " +
                           std::to_string(rank) + " (expected [" + std::to_string(-rank) + ", " +
                           std::to_string(rank - 1) + "])");
  return axis < 0 ? axis + rank : axis;
}

StatusOr<std::vector<int64_t>> NormalizeAxes(std::string_view op, const std::vector<int64_t> &axes,
                                             int64_t rank) {
  std::vector<int64_t> result;
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t norm, NormalizeAxis(op, a, rank));
    if (!seen.insert(norm).second)
      return OpError(op, "axis " + std::to_string(a) + " appears more than once");
    result.push_back(norm);
  }
  return result;
}

bool BroadcastShapes(const Shape &a, const Shape &b, Shape *out) {
  const size_t rank = a.size() > b.size() ? a.size() : b.size();
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      result[i] = da;
    } else if (da == 1) {
      result[i] = db;
    } else {
      return false;
    }
  }
  *out = std::move(result);
  return true;
}

StatusOr<Shape> BroadcastPair(std::string_view op, const Shape &a, const Shape &b) {
  Shape out;
  if (!BroadcastShapes(a, b, &out))
    return OpError(op,
                   "shapes " + ShapeToString(a) + " and " + ShapeToString(b) + " do not broadcast");
  return out;
}

Status CheckShape(std::string_view op, const Shape &shape) {
  // 2^62 elements is far beyond any memory and keeps byte counts in range.
  constexpr int64_t kLimit = int64_t{1} << 62;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return OpError(op, "result shape " + ShapeToString(shape) + " has a negative dim");
    if (d != 0 && n > kLimit / d)
      return OpError(op, "result shape " + ShapeToString(shape) + " is too large");
    n *= d;
  }
  return Status::Ok();
}

Status CheckBlasLimit(std::string_view op, std::initializer_list<int64_t> dims) {
  for (int64_t d : dims)
    if (d > std::numeric_limits<int32_t>::max())
      return OpError(op, "dimension " + std::to_string(d) + " exceeds the BLAS limit of 2^31-1");
  return Status::Ok();
}

std::vector<int64_t> ContiguousStrides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

bool IsValueDType(DType t) {
  switch (t) {
  case DType::kF32:
  case DType::kF16:
  case DType::kBF16:
  case DType::kF64:
  case DType::kI8:
  case DType::kU8:
  case DType::kI32:
  case DType::kI64:
  case DType::kBool:
    return true;
  default:
    return false;
  }
}

} // namespace kiln
