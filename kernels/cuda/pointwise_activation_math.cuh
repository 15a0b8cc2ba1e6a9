// The activations of the fused products as device functions, shared by the
// activation kernels after a cuBLASLt GEMM (activation.cu) and the GEMV
// epilogues (gemv.cu). Precise libm forms (no fast-math intrinsics), so f32
// results stay within a few ulp of the CPU's f32 kernels.
#pragma once

#include "kernels/cuda/pointwise_activation.h"

namespace kiln::kernels::cuda {

inline constexpr float kActInvSqrt2 = 0.70710678118654752f;
inline constexpr float kActSqrt2OverPi = 0.79788456080286536f;
inline constexpr float kActGeluCubic = 0.044715f;

template <Activation A> __device__ __forceinline__ float ApplyActivation(float x) {
  if constexpr (A == Activation::kRelu) {
    return x < 0.0f ? 0.0f : x; // a compare, not fmaxf, so NaN passes through as on the CPU
  } else if constexpr (A == Activation::kGelu) {
    // x * Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2: no cancellation for x << 0.
    return 0.5f * x * erfcf(-x * kActInvSqrt2);
  } else if constexpr (A == Activation::kGeluTanh) {
    return 0.5f * x * (1.0f + tanhf(kActSqrt2OverPi * (x + kActGeluCubic * x * x * x)));
  } else if constexpr (A == Activation::kSilu) {
    return x / (1.0f + expf(-x));
  } else {
    return x;
  }
}

// The same, chosen at run time (for epilogues that run once per result).
__device__ __forceinline__ float ApplyActivation(Activation a, float x) {
  switch (a) {
  case Activation::kRelu:
    return ApplyActivation<Activation::kRelu>(x);
  case Activation::kGelu:
    return ApplyActivation<Activation::kGelu>(x);
  case Activation::kGeluTanh:
    return ApplyActivation<Activation::kGeluTanh>(x);
  case Activation::kSilu:
    return ApplyActivation<Activation::kSilu>(x);
  case Activation::kNone:
    break;
  }
  return x;
}

} // namespace kiln::kernels::cuda
