// Loads and stores of the kernels' float element types, widened to f32 for
// the math and rounded to nearest even once on the way back. Device-side
// only; included by the .cu files of kernels/cuda.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace kiln::kernels::cuda {

__device__ __forceinline__ float LoadF32(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float LoadF32(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float LoadF32(const __nv_bfloat16 *p, int64_t i) {
  return __bfloat162float(p[i]);
}

__device__ __forceinline__ void StoreF32(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void StoreF32(__half *p, int64_t i, float v) {
  p[i] = __float2half_rn(v);
}
__device__ __forceinline__ void StoreF32(__nv_bfloat16 *p, int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

// Blocks for a grid-stride loop over n items: enough to fill the device,
// capped so the grid stays within launch limits for any n.
inline unsigned GridStrideBlocks(int64_t n, int threads) {
  constexpr int64_t kMaxBlocks = int64_t{1} << 20;
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

} // namespace kiln::kernels::cuda
