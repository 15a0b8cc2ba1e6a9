#include "op_util.h"

#include <cstring>

namespace kiln::cpu {

void CopyBytes(const TensorView &in, TensorView &out) {
  if (in.data != out.data && in.bytes() > 0)
    std::memmove(out.data, in.data, in.bytes());
}

bool ToScalarKind(DType t, kernels::ScalarKind *kind) {
  using K = kernels::ScalarKind;
  switch (t) {
  case DType::kF32:
    *kind = K::kF32;
    return true;
  case DType::kF16:
    *kind = K::kF16;
    return true;
  case DType::kBF16:
    *kind = K::kBF16;
    return true;
  case DType::kF64:
    *kind = K::kF64;
    return true;
  case DType::kI8:
    *kind = K::kI8;
    return true;
  case DType::kU8:
    *kind = K::kU8;
    return true;
  case DType::kI32:
    *kind = K::kI32;
    return true;
  case DType::kI64:
    *kind = K::kI64;
    return true;
  case DType::kBool:
    *kind = K::kBool;
    return true;
  default:
    return false;
  }
}

} // namespace kiln::cpu
