// The runtime's kinds as the kernels' (kernels/op_kinds.h): a plan's DType
// as ElemType, a fused op's activation as Activation. The one mapping of
// each, for every backend's op wrappers.
#pragma once

#include "core/shapes/fused_mlp.h"
#include "kernels/op_kinds.h"
#include "kiln/tensor.h"

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

// The fused ops' activation (core/shapes/fused_mlp.h) as the kernels' enum.
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

} // namespace kiln
