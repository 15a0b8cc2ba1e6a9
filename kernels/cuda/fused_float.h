// The float element types of the CUDA fused kernels (norms, rotary, gelu,
// attention), named without kiln runtime types so the kernel headers stay
// plain.
#pragma once

namespace kiln::kernels::cuda {

// f64 only for layer_normalization, whose CPU kernel also takes f64.
enum class FusedFloat { kF32, kF16, kBF16, kF64 };

} // namespace kiln::kernels::cuda
