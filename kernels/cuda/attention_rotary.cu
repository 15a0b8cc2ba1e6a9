#include "kernels/cuda/fused_io.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/attention_rotary.h"

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

// The rows' last leading dim (heads, in a token-major [.., T, H, D] x)
// broadcasts both tables: block (b, p) takes outer index b (every leading
// dim but the last), stages its cos/sin row in shared memory once, and then
// rotates part p of its H rows' pairs from there (gridDim.y parts: more
// than one when the outer indices are too few to fill the GPU, as in a
// decode step of one token, where a single block would walk all heads'
// pairs one load after another); each thread reads its pair once and
// writes it once, so x and y may alias.
constexpr int kHeadsThreads = 256;
// Blocks that fill an H200 (132 SMs) a few times over.
constexpr int64_t kFillBlocks = 528;
constexpr int64_t kMaxHeadsRotary = 1024; // R floats of cos and of sin in shared memory

template <typename T>
__global__ void __launch_bounds__(kHeadsThreads)
    RotaryHeads(const T *x, const RotaryTable cos, const RotaryTable sin, T *y,
                const RotaryLayout l, int64_t outer) {
  WaitForPriorKernels();
  __shared__ float tc[kMaxHeadsRotary], ts[kMaxHeadsRotary];
  const int64_t heads = l.lead[l.lead_rank - 1];
  const int64_t d = l.dim, r = l.rotary_dim, half = r / 2;
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    int64_t off_c, off_s;
    TableOffsets(o * heads, l, cos, sin, &off_c, &off_s);
    __syncthreads(); // the previous outer index's readers are done
    for (int64_t c = threadIdx.x; c < r; c += blockDim.x) {
      tc[c] = LoadAs<float>(cos.data, cos.type, off_c + c);
      ts[c] = LoadAs<float>(sin.data, sin.type, off_s + c);
    }
    __syncthreads();
    const T *xo = x + o * heads * d;
    T *yo = y + o * heads * d;
    const int64_t first = blockIdx.y * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    const int64_t step = static_cast<int64_t>(gridDim.y) * blockDim.x;
    for (int64_t w = first; w < heads * half; w += step) {
      const int64_t h = w / half, j = w - h * half;
      const int64_t c0 = l.interleaved ? 2 * j : j, c1 = l.interleaved ? 2 * j + 1 : j + half;
      const T *xr = xo + h * d;
      T *yr = yo + h * d;
      const float x0 = Widen<float>(xr[c0]), x1 = Widen<float>(xr[c1]);
      yr[c0] = Narrow<T>(x0 * tc[c0] - x1 * ts[c0]);
      yr[c1] = Narrow<T>(x1 * tc[c1] + x0 * ts[c1]);
    }
    if (x != y && r < d)
      for (int64_t w = first; w < heads * (d - r); w += step) {
        const int64_t h = w / (d - r), c = r + (w - h * (d - r));
        yo[h * d + c] = xo[h * d + c];
      }
  }
}

// Whether RotaryHeads serves this layout: both tables broadcast over the
// last leading dim and a row's table fits in shared memory.
bool HeadsBroadcast(const RotaryTable &cos, const RotaryTable &sin, const RotaryLayout &l) {
  const int last = l.lead_rank - 1;
  return l.lead_rank >= 1 && cos.strides[last] == 0 && sin.strides[last] == 0 && l.lead[last] > 1 &&
         l.rotary_dim <= kMaxHeadsRotary;
}

template <typename T>
cudaError_t LaunchRotary(const void *x, const RotaryTable &cos, const RotaryTable &sin, void *y,
                         const RotaryLayout &l, int64_t rows, dim3 grid, dim3 block,
                         cudaStream_t stream) {
  if (HeadsBroadcast(cos, sin, l)) {
    const int64_t heads = l.lead[l.lead_rank - 1];
    const int64_t outer = rows / heads;
    const unsigned g = static_cast<unsigned>(outer < (1 << 20) ? outer : (1 << 20));
    // Parts of the heads per outer index: one pair a thread while the
    // outer indices alone make fewer than kFillBlocks blocks.
    const int64_t pairs = heads * (l.rotary_dim / 2 > 0 ? l.rotary_dim / 2 : 1);
    int64_t parts = 1;
    if (outer < kFillBlocks) {
      parts = (pairs + kHeadsThreads - 1) / kHeadsThreads;
      const int64_t cap = (kFillBlocks + outer - 1) / outer;
      parts = parts < cap ? parts : cap;
    }
    return Launch(RotaryHeads<T>, dim3(g, static_cast<unsigned>(parts)), dim3(kHeadsThreads), 0,
                  stream, static_cast<const T *>(x), cos, sin, static_cast<T *>(y), l, outer);
  }
  RotaryRows<T><<<grid, block, 0, stream>>>(static_cast<const T *>(x), cos, sin,
                                            static_cast<T *>(y), l, rows);
  return cudaSuccess;
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
  cudaError_t err;
  switch (type) {
  case FusedFloat::kF32:
    err = LaunchRotary<float>(x, cos, sin, y, layout, rows, grid, block, stream);
    break;
  case FusedFloat::kF16:
    err = LaunchRotary<__half>(x, cos, sin, y, layout, rows, grid, block, stream);
    break;
  case FusedFloat::kBF16:
    err = LaunchRotary<__nv_bfloat16>(x, cos, sin, y, layout, rows, grid, block, stream);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return err != cudaSuccess ? err : cudaGetLastError();
}

} // namespace kiln::kernels::cuda
