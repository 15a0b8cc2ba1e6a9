#include "kernels/cuda/fused_io.cuh"
#include "kernels/cuda/rotary.h"

namespace kiln::kernels::cuda {
namespace {

// The offset of x's row `row` into a table: the leading index decomposed
// once per row (32-bit division where the values allow, as they always do
// in practice; 64-bit division costs dozens of instructions).
__device__ __forceinline__ void TableOffsets(int64_t row, const RotaryLayout &l,
                                             const RotaryTable &cos, const RotaryTable &sin,
                                             int64_t *off_c, int64_t *off_s) {
  int64_t oc = 0, os = 0;
  for (int k = l.lead_rank - 1; k >= 0; --k) {
    int64_t idx;
    if (row <= 0xffffffffll && l.lead[k] <= 0xffffffffll) {
      const uint32_t r32 = static_cast<uint32_t>(row), n32 = static_cast<uint32_t>(l.lead[k]);
      idx = r32 % n32;
      row = r32 / n32;
    } else {
      idx = row % l.lead[k];
      row /= l.lead[k];
    }
    oc += idx * cos.strides[k];
    os += idx * sin.strides[k];
  }
  *off_c = oc;
  *off_s = os;
}

// threadIdx.y picks a row (blocks stride over rows), threadIdx.x walks the
// row's rotated pairs, then its passed-through tail. Each thread computes
// both elements of a pair from the same two loads, so x and y may alias.
template <typename T>
__global__ void RotaryRows(const T *x, const RotaryTable cos, const RotaryTable sin, T *y,
                           const RotaryLayout l, int64_t rows) {
  const int64_t d = l.dim, r = l.rotary_dim, half = r / 2;
  for (int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.y) + threadIdx.y; row < rows;
       row += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    int64_t off_c, off_s;
    TableOffsets(row, l, cos, sin, &off_c, &off_s);
    const T *xr = x + row * d;
    T *yr = y + row * d;
    for (int64_t j = threadIdx.x; j < half; j += blockDim.x) {
      // The pair (c0, c1): rot(x)[c0] = -x[c1], rot(x)[c1] = +x[c0].
      const int64_t c0 = l.interleaved ? 2 * j : j, c1 = l.interleaved ? 2 * j + 1 : j + half;
      const float x0 = Widen<float>(xr[c0]), x1 = Widen<float>(xr[c1]);
      const float cos0 = LoadAs<float>(cos.data, cos.type, off_c + c0);
      const float cos1 = LoadAs<float>(cos.data, cos.type, off_c + c1);
      const float sin0 = LoadAs<float>(sin.data, sin.type, off_s + c0);
      const float sin1 = LoadAs<float>(sin.data, sin.type, off_s + c1);
      yr[c0] = Narrow<T>(x0 * cos0 - x1 * sin0);
      yr[c1] = Narrow<T>(x1 * cos1 + x0 * sin1);
    }
    for (int64_t c = r + threadIdx.x; c < d; c += blockDim.x)
      yr[c] = xr[c];
  }
}

} // namespace

cudaError_t Rotary(FusedFloat type, const void *x, const RotaryTable &cos, const RotaryTable &sin,
                   void *y, const RotaryLayout &layout, cudaStream_t stream) {
  int64_t rows = 1;
  for (int k = 0; k < layout.lead_rank; ++k)
    rows *= layout.lead[k];
  if (rows == 0 || layout.dim == 0)
    return cudaSuccess;
  // Threads along a row: enough for its pairs (at most 64), the rest of
  // the block's 256 on further rows.
  const int64_t work = layout.rotary_dim / 2 > 0 ? layout.rotary_dim / 2 : layout.dim;
  unsigned tx = 1;
  while (tx < 64 && tx < work)
    tx *= 2;
  tx = tx < 32 ? 32 : tx;
  const dim3 block(tx, 256 / tx);
  const int64_t blocks = (rows + block.y - 1) / block.y;
  const unsigned grid = static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20));
  switch (type) {
  case FusedFloat::kF32:
    RotaryRows<float><<<grid, block, 0, stream>>>(static_cast<const float *>(x), cos, sin,
                                                  static_cast<float *>(y), layout, rows);
    break;
  case FusedFloat::kF16:
    RotaryRows<__half><<<grid, block, 0, stream>>>(static_cast<const __half *>(x), cos, sin,
                                                   static_cast<__half *>(y), layout, rows);
    break;
  case FusedFloat::kBF16:
    RotaryRows<__nv_bfloat16><<<grid, block, 0, stream>>>(static_cast<const __nv_bfloat16 *>(x),
                                                          cos, sin, static_cast<__nv_bfloat16 *>(y),
                                                          layout, rows);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

} // namespace kiln::kernels::cuda
