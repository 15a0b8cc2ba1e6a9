// BroadcastMatrix (matrix_broadcast.h): one grid-stride kernel over the
// result, templated on the element type.
#include "kernels/cuda/products_matrix_broadcast.h"

#include "kernels/cuda/elem_access.cuh"

namespace kiln::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ double Widen(const double *p, int64_t i) { return p[i]; }
template <typename T> __device__ __forceinline__ float Widen(const T *p, int64_t i) {
  return LoadF32(p, i);
}
__device__ __forceinline__ void Narrow(double *p, int64_t i, double v) { p[i] = v; }
template <typename T> __device__ __forceinline__ void Narrow(T *p, int64_t i, float v) {
  StoreF32(p, i, v);
}

// S is the type the product is computed in: double for f64, else f32.
template <typename T, typename S>
__global__ void BroadcastMatrixKernel(const T *c, int64_t row_stride, int64_t col_stride, S scale,
                                      T *d, int64_t m, int64_t n) {
  const int64_t total = m * n;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t r = i / n, j = i - r * n;
    Narrow(d, i, scale * Widen(c, r * row_stride + j * col_stride));
  }
}

template <typename T, typename S>
cudaError_t Launch(const void *c, int64_t row_stride, int64_t col_stride, double scale, void *d,
                   int64_t m, int64_t n, cudaStream_t stream) {
  BroadcastMatrixKernel<T, S><<<GridStrideBlocks(m * n, kThreads), kThreads, 0, stream>>>(
      static_cast<const T *>(c), row_stride, col_stride, static_cast<S>(scale), static_cast<T *>(d),
      m, n);
  return cudaGetLastError();
}

} // namespace

cudaError_t BroadcastMatrix(FloatElem t, const void *c, int64_t row_stride, int64_t col_stride,
                            double scale, void *d, int64_t m, int64_t n, cudaStream_t stream) {
  if (m <= 0 || n <= 0)
    return cudaSuccess;
  switch (t) {
  case FloatElem::kF32:
    return Launch<float, float>(c, row_stride, col_stride, scale, d, m, n, stream);
  case FloatElem::kF64:
    return Launch<double, double>(c, row_stride, col_stride, scale, d, m, n, stream);
  case FloatElem::kF16:
    return Launch<__half, float>(c, row_stride, col_stride, scale, d, m, n, stream);
  case FloatElem::kBF16:
    return Launch<__nv_bfloat16, float>(c, row_stride, col_stride, scale, d, m, n, stream);
  }
  return cudaErrorInvalidValue;
}

} // namespace kiln::kernels::cuda
