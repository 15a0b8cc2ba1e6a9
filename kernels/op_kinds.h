// The op and element kinds that every backend's kernels take as plain
// arguments, in one place: the CPU kernels (kernels/cpu/) and the CUDA ones
// (kernels/cuda/, which see them through namespace kiln::kernels::cuda) use
// these enums, and the backends map a plan's DType to ElemType once
// (runtime/src/backends/elem_type.h). No plan or runtime type here: kernels
// stay plain functions over pointers and sizes.
#pragma once

#include <cstddef>

namespace kiln::kernels {

// Element types. Booleans are one byte; any non-zero byte is true and
// results are always 0 or 1.
enum class ElemType { kF32, kF16, kBF16, kF64, kI8, kU8, kI32, kI64, kBool };

inline size_t ElemSize(ElemType t) {
  switch (t) {
  case ElemType::kF64:
  case ElemType::kI64:
    return 8;
  case ElemType::kF32:
  case ElemType::kI32:
    return 4;
  case ElemType::kF16:
  case ElemType::kBF16:
    return 2;
  default:
    return 1;
  }
}

inline bool IsFloatType(ElemType t) {
  return t == ElemType::kF32 || t == ElemType::kF16 || t == ElemType::kBF16 || t == ElemType::kF64;
}

// Elementwise math: one enumerator per line of kernels/unary_ops.def.
enum class UnaryOp {
#define KILN_UNARY(Id, name, float_math) k##Id,
#include "kernels/unary_ops.def"
};

// Whether op is defined on integer dtypes (a KILN_UNARY_INT line).
constexpr bool UnaryOnIntegers(UnaryOp op) {
  switch (op) {
#define KILN_UNARY(Id, name, float_math)                                                           \
  case UnaryOp::k##Id:                                                                             \
    return false;
#define KILN_UNARY_INT(Id, name, float_math, int_math)                                             \
  case UnaryOp::k##Id:                                                                             \
    return true;
#include "kernels/unary_ops.def"
  }
  return false;
}

// Reductions over a set of dims: one enumerator per line of
// kernels/reduce_ops.def.
enum class ReduceOp {
#define KILN_REDUCE(Id, name) k##Id,
#include "kernels/reduce_ops.def"
};

// Broadcasting arithmetic; Max and Min propagate NaN.
enum class BinaryOp { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };
// Comparisons to bool; NaN compares false (and unequal).
enum class CompareOp { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual };
// Logic on bools; kEqual compares truth values (Equal on booleans).
enum class LogicOp { kAnd, kOr, kXor, kEqual };

// The activations of the fused linear and gated MLP ops: kGelu is the exact
// (erf) form, kGeluTanh the tanh approximation.
enum class Activation { kNone, kRelu, kGelu, kGeluTanh, kSilu };

} // namespace kiln::kernels
