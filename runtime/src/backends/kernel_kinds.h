// The runtime's kinds as the kernels' (kernels/op_kinds.h): a plan's DType
// as ElemType, a fused op's activation as Activation. The one mapping of
// each, for every backend's op wrappers.
#pragma once

#include "core/kernel.h"
#include "core/named_list.h"
#include "core/shapes/products_mlp.h"
#include "kernels/op_kinds.h"
#include "kiln/tensor.h"

#include <cstddef>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln {

// False for a dtype the kernels do not know (kUndefined).
inline bool ToElemType(DType t, kernels::ElemType *e) {
  using E = kernels::ElemType;
  switch (t) {
  case DType::kF32:
    *e = E::kF32;
    return true;
  case DType::kF16:
    *e = E::kF16;
    return true;
  case DType::kBF16:
    *e = E::kBF16;
    return true;
  case DType::kF64:
    *e = E::kF64;
    return true;
  case DType::kI8:
    *e = E::kI8;
    return true;
  case DType::kU8:
    *e = E::kU8;
    return true;
  case DType::kI32:
    *e = E::kI32;
    return true;
  case DType::kI64:
    *e = E::kI64;
    return true;
  case DType::kBool:
    *e = E::kBool;
    return true;
  default:
    return false;
  }
}

// The fused ops' activation (core/shapes/products_mlp.h) as the kernels' enum.
inline kernels::Activation ToKernelActivation(FusedActivation act) {
  using kernels::Activation;
  switch (act) {
  case FusedActivation::kRelu:
    return Activation::kRelu;
  case FusedActivation::kGelu:
    return Activation::kGelu;
  case FusedActivation::kGeluTanh:
    return Activation::kGeluTanh;
  case FusedActivation::kSilu:
    return Activation::kSilu;
  case FusedActivation::kNone:
    break;
  }
  return Activation::kNone;
}

// The plan ops that are one kernel enum each, named once for every backend.
// A backend's op wrapper is a template over the entry's index (its name and
// kind are constants there), registered by AddEach.
template <class Kind> struct NamedKind {
  const char *name;
  Kind kind;
};
// Every line of kernels/unary_ops.def.
inline constexpr NamedKind<kernels::UnaryOp> kUnaryOps[] = {
#define KILN_UNARY(Id, name, float_math) {name, kernels::UnaryOp::k##Id},
#include "kernels/unary_ops.def"
};
// The ops whose result holds the operand's bytes unchanged (only the shape
// differs): every backend runs them as its copy.
inline constexpr const char *kCopyOps[] = {"reshape", "flatten", "squeeze", "unsqueeze"};

// Every line of kernels/reduce_ops.def.
inline constexpr NamedKind<kernels::ReduceOp> kReduceOps[] = {
#define KILN_REDUCE(Id, name) {name, kernels::ReduceOp::k##Id},
#include "kernels/reduce_ops.def"
};
// Broadcasting arithmetic of two operands (max and min take any number:
// each backend registers them apart).
inline constexpr NamedKind<kernels::BinaryOp> kArithOps[] = {{"add", kernels::BinaryOp::kAdd},
                                                             {"sub", kernels::BinaryOp::kSub},
                                                             {"mul", kernels::BinaryOp::kMul},
                                                             {"div", kernels::BinaryOp::kDiv},
                                                             {"pow", kernels::BinaryOp::kPow}};
inline constexpr NamedKind<kernels::CompareOp> kCompareOps[] = {
    {"equal", kernels::CompareOp::kEqual},
    {"less", kernels::CompareOp::kLess},
    {"greater", kernels::CompareOp::kGreater},
    {"less_or_equal", kernels::CompareOp::kLessOrEqual},
    {"greater_or_equal", kernels::CompareOp::kGreaterOrEqual}};
inline constexpr NamedKind<kernels::LogicOp> kLogicOps[] = {{"and", kernels::LogicOp::kAnd},
                                                            {"or", kernels::LogicOp::kOr},
                                                            {"xor", kernels::LogicOp::kXor}};

} // namespace kiln
