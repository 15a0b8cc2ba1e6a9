// Helpers shared by the CPU op families: operand checks with clear messages,
// reading shape operands, axis normalization, broadcasting and dtype
// dispatch. Every message starts with the op type ("reshape: ...").
#pragma once

#include "kernels/cpu/cast.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "core/op_attrs.h"
#include "op_registry.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cpu {

using Inputs = std::vector<const TensorView *>;
using Outputs = std::vector<TensorView>;

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

// Numpy broadcast of two shapes.
StatusOr<Shape> BroadcastPair(std::string_view op, const Shape &a, const Shape &b);

// Rejects negative dims and element counts that overflow; used on shapes
// computed from operand values.
Status CheckShape(std::string_view op, const Shape &shape);

// Row-major strides in elements.
std::vector<int64_t> ContiguousStrides(const Shape &shape);

// Copies in's bytes to out unless they already share memory (in-place plans).
void CopyBytes(const TensorView &in, TensorView &out);

bool ToScalarKind(DType t, kernels::ScalarKind *kind);

// Calls f(T{}) with T the C++ type of `t`, for the arithmetic types the
// kernels instantiate; other dtypes give Unimplemented naming the op.
template <typename F> Status DispatchNumeric(std::string_view op, DType t, F &&f) {
  switch (t) {
  case DType::kF32:
    return f(float{});
  case DType::kF64:
    return f(double{});
  case DType::kI8:
    return f(int8_t{});
  case DType::kU8:
    return f(uint8_t{});
  case DType::kI32:
    return f(int32_t{});
  case DType::kI64:
    return f(int64_t{});
  default:
    return Unimplemented(std::string(op) + ": no CPU kernel for dtype " + DTypeName(t));
  }
}

// Same, for float and double only.
template <typename F> Status DispatchFloat(std::string_view op, DType t, F &&f) {
  switch (t) {
  case DType::kF32:
    return f(float{});
  case DType::kF64:
    return f(double{});
  default:
    return Unimplemented(std::string(op) + ": no CPU kernel for dtype " + DTypeName(t) +
                         " (expected f32 or f64)");
  }
}

// Op tables of each family, gathered by op_registry.cpp.
void AddBinaryOps(std::vector<OpDef> &table);
void AddUnaryOps(std::vector<OpDef> &table);
void AddMatMulOps(std::vector<OpDef> &table);
void AddReduceOps(std::vector<OpDef> &table);
void AddNormOps(std::vector<OpDef> &table);
void AddShapeOps(std::vector<OpDef> &table);
void AddLayoutOps(std::vector<OpDef> &table);
void AddIndexOps(std::vector<OpDef> &table);
// The fused transformer ops of docs/fused-ops.md.
void AddFusedNormOps(std::vector<OpDef> &table);
void AddFusedMlpOps(std::vector<OpDef> &table);
void AddFusedAttentionOps(std::vector<OpDef> &table);
// paged_attention: attention over the runtime-owned paged KV cache.
void AddPagedAttentionOps(std::vector<OpDef> &table);

} // namespace kiln::cpu
