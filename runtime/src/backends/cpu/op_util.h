// Helpers of the CPU kernels: byte copies, the kernels' scalar kinds and
// dtype dispatch. The operand checks they share with the shape rules
// (CheckArity, NormalizeAxis, BroadcastPair, ...) are backend-neutral and
// live in core/shapes/operand_checks.h, included here for every kernel file.
#pragma once

#include "core/kernel.h"
#include "core/op_attrs.h"
#include "core/shapes/operand_checks.h"
#include "backends/kernel_kinds.h"
#include "kernels/cpu/pointwise_cast.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::cpu {

// Copies in's bytes to out unless they already share memory (in-place plans).
void CopyBytes(const TensorView &in, TensorView &out);

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

} // namespace kiln::cpu
