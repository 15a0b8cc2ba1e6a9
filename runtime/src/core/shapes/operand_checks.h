// Operand checks shared by every op's shape rule and by the kernels of every
// backend: operand counts and dtypes, reading shape operands, axis
// normalization and broadcasting, each failing with a clear message that
// starts with the op type ("reshape: ..."). Backend-neutral: nothing here
// reads a tensor's data except the integer shape operands the host holds.
#pragma once

#include "core/kernel.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// InvalidArgument("<op>: <message>").
Status OpError(std::string_view op, const std::string &message);

// Checks the operand and result counts; the first `required` inputs must be
// present (non-null), the rest up to `max_in` are optional.
Status CheckArity(std::string_view op, const Inputs &in, size_t required, size_t max_in,
                  const Outputs &out, size_t min_out, size_t max_out);

// Checks that operand `name` has one of `allowed` dtypes.
Status CheckDType(std::string_view op, const char *name, const TensorView &t,
                  std::initializer_list<DType> allowed);
Status CheckSameDType(std::string_view op, const TensorView &a, const TensorView &b);

// The values of an integer (i64 or i32) operand, which an op needs to know its
// result shape. Fails with "shape of <op> depends on values not known before
// execution" when the values are not available yet.
StatusOr<std::vector<int64_t>> ReadInts(std::string_view op, const char *name, const TensorView &t);
// A single value (numel 1) of an integer operand.
StatusOr<int64_t> ReadScalarInt(std::string_view op, const char *name, const TensorView &t);

// Maps axis in [-rank, rank) to [0, rank).
StatusOr<int64_t> NormalizeAxis(std::string_view op, int64_t axis, int64_t rank);
// Normalizes a list of axes against `rank`, rejecting duplicates.
StatusOr<std::vector<int64_t>> NormalizeAxes(std::string_view op, const std::vector<int64_t> &axes,
                                             int64_t rank);

// Numpy broadcast of two shapes; false when they do not broadcast.
bool BroadcastShapes(const Shape &a, const Shape &b, Shape *out);
// The same, failing with a message naming the op and both shapes.
StatusOr<Shape> BroadcastPair(std::string_view op, const Shape &a, const Shape &b);

// Rejects negative dims and element counts that overflow; used on shapes
// computed from operand values.
Status CheckShape(std::string_view op, const Shape &shape);

// Matrix products go to libraries with 32-bit dims (BLAS, cuBLAS): rejects
// any dim that would be truncated.
Status CheckBlasLimit(std::string_view op, std::initializer_list<int64_t> dims);

// Row-major strides in elements.
std::vector<int64_t> ContiguousStrides(const Shape &shape);

// True for the dtypes a tensor may hold and Cast converts between: f32, f16,
// bf16, f64, i8, u8, i32, i64 and bool.
bool IsValueDType(DType t);

} // namespace kiln
