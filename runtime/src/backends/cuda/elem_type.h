// kiln's DType as the CUDA kernels' ElemType (kernels/cuda/elem_type.h).
#pragma once

#include "kernels/cuda/elem_type.h"
#include "kiln/tensor.h"

namespace kiln::cuda {

// False for a dtype the kernels do not know (kUndefined).
inline bool ToElemType(DType t, kernels::cuda::ElemType *e) {
  using E = kernels::cuda::ElemType;
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

} // namespace kiln::cuda
