// The element types the CUDA kernels take, as plain launcher arguments (the
// op wrappers map kiln's DType here). Booleans are one byte; any non-zero
// byte is true and results are always 0 or 1.
#pragma once

#include <cstddef>

namespace kiln::kernels::cuda {

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

} // namespace kiln::kernels::cuda
