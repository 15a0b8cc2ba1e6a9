#include "kernels/cuda/fused_io.cuh"
#include "kernels/cuda/pointwise_gelu.h"

namespace kiln::kernels::cuda {
namespace {

// x * Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2, which keeps its relative
// accuracy in the negative tail where 1 + erf(x / sqrt 2) cancels.
__device__ __forceinline__ float GeluErf(float x) {
  return 0.5f * x * erfcf(-x * 0.70710678118654752f);
}

__device__ __forceinline__ float GeluTanh(float x) {
  const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

template <typename T, bool kTanh> __global__ void GeluElements(const T *x, T *y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = Widen<float>(x[i]);
    y[i] = Narrow<T>(kTanh ? GeluTanh(v) : GeluErf(v));
  }
}

template <typename T>
void LaunchTyped(bool tanh_form, const void *x, void *y, int64_t n, unsigned grid,
                 cudaStream_t stream) {
  constexpr int kThreads = 256;
  const T *xt = static_cast<const T *>(x);
  T *yt = static_cast<T *>(y);
  if (tanh_form)
    GeluElements<T, true><<<grid, kThreads, 0, stream>>>(xt, yt, n);
  else
    GeluElements<T, false><<<grid, kThreads, 0, stream>>>(xt, yt, n);
}

} // namespace

cudaError_t Gelu(FusedFloat type, bool tanh_form, const void *x, void *y, int64_t n,
                 cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  const int64_t blocks = (n + 255) / 256;
  const unsigned grid = static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20));
  switch (type) {
  case FusedFloat::kF32:
    LaunchTyped<float>(tanh_form, x, y, n, grid, stream);
    break;
  case FusedFloat::kF16:
    LaunchTyped<__half>(tanh_form, x, y, n, grid, stream);
    break;
  case FusedFloat::kBF16:
    LaunchTyped<__nv_bfloat16>(tanh_form, x, y, n, grid, stream);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

} // namespace kiln::kernels::cuda
