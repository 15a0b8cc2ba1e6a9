#include "kernels/cuda/fused_io.cuh"
#include "kernels/cuda/rotary.h"

namespace kiln::kernels::cuda {
namespace {

// One thread per element, striding over the tensor.
template <typename T>
__global__ void RotaryElements(const T *x, const RotaryTable cos, const RotaryTable sin, T *y,
                               const RotaryLayout l, int64_t n) {
  const int64_t d = l.dim, r = l.rotary_dim, half = r / 2;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % d;
    if (c >= r) {
      y[i] = x[i];
      continue;
    }
    int64_t row = i / d, off_c = 0, off_s = 0;
    for (int k = l.lead_rank - 1; k >= 0; --k) {
      const int64_t idx = row % l.lead[k];
      row /= l.lead[k];
      off_c += idx * cos.strides[k];
      off_s += idx * sin.strides[k];
    }
    const float cv = LoadAs<float>(cos.data, cos.type, off_c + c);
    const float sv = LoadAs<float>(sin.data, sin.type, off_s + c);
    const float xv = Widen<float>(x[i]);
    // rot(x)[c] = -x[partner] for the first of a pair, +x[partner] for the second.
    int64_t partner;
    bool first;
    if (l.interleaved) {
      first = c % 2 == 0;
      partner = first ? c + 1 : c - 1;
    } else {
      first = c < half;
      partner = first ? c + half : c - half;
    }
    const float pv = Widen<float>(x[i - c + partner]);
    y[i] = Narrow<T>(first ? xv * cv - pv * sv : xv * cv + pv * sv);
  }
}

} // namespace

cudaError_t Rotary(FusedFloat type, const void *x, const RotaryTable &cos, const RotaryTable &sin,
                   void *y, const RotaryLayout &layout, cudaStream_t stream) {
  int64_t n = layout.dim;
  for (int k = 0; k < layout.lead_rank; ++k)
    n *= layout.lead[k];
  if (n == 0)
    return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20));
  switch (type) {
  case FusedFloat::kF32:
    RotaryElements<float><<<grid, kThreads, 0, stream>>>(static_cast<const float *>(x), cos, sin,
                                                         static_cast<float *>(y), layout, n);
    break;
  case FusedFloat::kF16:
    RotaryElements<__half><<<grid, kThreads, 0, stream>>>(static_cast<const __half *>(x), cos, sin,
                                                          static_cast<__half *>(y), layout, n);
    break;
  case FusedFloat::kBF16:
    RotaryElements<__nv_bfloat16>
        <<<grid, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16 *>(x), cos, sin,
                                        static_cast<__nv_bfloat16 *>(y), layout, n);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

} // namespace kiln::kernels::cuda
