// Device helpers of the CUDA fused kernels: widening loads and rounding
// stores of f32/f16/bf16/f64 elements, and warp and block reductions.
// Included by the .cu files only.
#pragma once

#include "kernels/cuda/fused_float.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace kiln::kernels::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

// A value widened to the accumulator type A (f32, or f64 for f64 data).
template <typename A> __device__ __forceinline__ A Widen(float v) { return static_cast<A>(v); }
template <typename A> __device__ __forceinline__ A Widen(double v) { return static_cast<A>(v); }
template <typename A> __device__ __forceinline__ A Widen(__half v) {
  return static_cast<A>(__half2float(v));
}
template <typename A> __device__ __forceinline__ A Widen(__nv_bfloat16 v) {
  return static_cast<A>(__bfloat162float(v));
}

// An accumulator value rounded once to nearest even into T.
template <typename T> __device__ __forceinline__ T Narrow(float v);
template <> __device__ __forceinline__ float Narrow<float>(float v) { return v; }
template <> __device__ __forceinline__ __half Narrow<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 Narrow<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <typename T> __device__ __forceinline__ T Narrow(double v);
template <> __device__ __forceinline__ double Narrow<double>(double v) { return v; }

// Element i of an array whose type is known only at run time (parameters
// such as a norm's scale or rotary's cos/sin may differ from x's type).
template <typename A> __device__ __forceinline__ A LoadAs(const void *p, FusedFloat t, int64_t i) {
  switch (t) {
  case FusedFloat::kF16:
    return Widen<A>(static_cast<const __half *>(p)[i]);
  case FusedFloat::kBF16:
    return Widen<A>(static_cast<const __nv_bfloat16 *>(p)[i]);
  case FusedFloat::kF64:
    return static_cast<A>(static_cast<const double *>(p)[i]);
  default:
    return static_cast<A>(static_cast<const float *>(p)[i]);
  }
}

template <typename A> __device__ __forceinline__ A WarpSum(A v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// The sum of v over the block, returned to every thread. `shared` holds 32
// values; blockDim.x is a multiple of 32. Ends with a barrier, so `shared`
// may be reused at once.
template <typename A> __device__ A BlockSum(A v, A *shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = WarpSum(v);
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  A total = lane < warps ? shared[lane] : A(0);
  total = WarpSum(total);
  __syncthreads();
  return total;
}

// Widens 16 bytes of T (4 floats or 8 halves) from global memory into dst.
__device__ __forceinline__ void WidenVector(const float *src, float *dst) {
  const float4 v = *reinterpret_cast<const float4 *>(src);
  dst[0] = v.x;
  dst[1] = v.y;
  dst[2] = v.z;
  dst[3] = v.w;
}
__device__ __forceinline__ void WidenVector(const __half *src, float *dst) {
  const uint4 v = *reinterpret_cast<const uint4 *>(src);
  const __half2 *h = reinterpret_cast<const __half2 *>(&v);
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    dst[2 * i] = f.x;
    dst[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void WidenVector(const __nv_bfloat16 *src, float *dst) {
  const uint4 v = *reinterpret_cast<const uint4 *>(src);
  const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    dst[2 * i] = f.x;
    dst[2 * i + 1] = f.y;
  }
}

// Rounds 16 bytes' worth of T (4 floats or 8 halves) from src and stores
// them with one 16-byte write.
template <typename T> __device__ __forceinline__ void NarrowVector(const float *src, T *dst) {
  constexpr int kN = 16 / sizeof(T);
  alignas(16) T e[kN];
  for (int i = 0; i < kN; ++i)
    e[i] = Narrow<T>(src[i]);
  *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(e);
}

} // namespace kiln::kernels::cuda
