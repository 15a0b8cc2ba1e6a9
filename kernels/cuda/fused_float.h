// The float element types of the CUDA fused kernels (norms, rotary, gelu,
// attention), named without kiln runtime types so the kernel headers stay
// plain.
#pragma once

#include <cstdint>

namespace kiln::kernels::cuda {

// f64 only for layer_normalization, whose CPU kernel also takes f64.
enum class FusedFloat { kF32, kF16, kBF16, kF64 };

inline int64_t FusedFloatBytes(FusedFloat t) {
  switch (t) {
  case FusedFloat::kF16:
  case FusedFloat::kBF16:
    return 2;
  case FusedFloat::kF64:
    return 8;
  default:
    return 4;
  }
}

// Whether `p` may be read and written 16 bytes at a time.
inline bool Aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

} // namespace kiln::kernels::cuda
