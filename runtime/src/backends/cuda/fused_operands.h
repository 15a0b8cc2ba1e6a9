// Operand types of the CUDA fused-op wrappers (ops_norm.cpp,
// ops_attention.cpp): a float operand's dtype as the kernels' FusedFloat.
#pragma once

#include "core/shapes/operand_checks.h"
#include "kernels/cuda/fused_float.h"

#include <string>
#include <string_view>

namespace kiln::cuda {

// f32, f16, bf16, and f64 where `allow_f64`; InvalidArgument naming the
// operand otherwise.
inline StatusOr<kernels::cuda::FusedFloat>
FusedFloatOf(std::string_view op, const char *name, const TensorView &t, bool allow_f64 = false) {
  switch (t.dtype) {
  case DType::kF32:
    return kernels::cuda::FusedFloat::kF32;
  case DType::kF16:
    return kernels::cuda::FusedFloat::kF16;
  case DType::kBF16:
    return kernels::cuda::FusedFloat::kBF16;
  case DType::kF64:
    if (allow_f64)
      return kernels::cuda::FusedFloat::kF64;
    break;
  default:
    break;
  }
  return OpError(op, std::string("operand '") + name + "' has dtype " + DTypeName(t.dtype) +
                         ", which the CUDA kernel does not take (f32, f16, bf16" +
                         (allow_f64 ? ", f64" : "") + ")");
}

// The results' dtype must be x's (the shape table gives half results the
// first half operand's dtype, which differs from x's only in a mixed plan).
inline Status CheckResultDType(std::string_view op, const TensorView &x, const Outputs &out,
                               size_t count) {
  for (size_t i = 0; i < count && i < out.size(); ++i)
    if (out[i].dtype != x.dtype)
      return OpError(op, std::string("result ") + std::to_string(i) + " is " +
                             DTypeName(out[i].dtype) + " but x is " + DTypeName(x.dtype) +
                             "; the CUDA kernel writes x's dtype");
  return Status::Ok();
}

} // namespace kiln::cuda
