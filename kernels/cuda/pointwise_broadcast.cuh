// The one loop every broadcasting kernel runs: a grid-stride walk over the
// output of a Broadcast (pointwise.h) that hands each element's input
// offsets to a functor. Three variants: every input the output's shape (the
// offsets are the index), 32-bit index arithmetic when the output has fewer
// than 2^31 elements, 64-bit otherwise.
#pragma once

#include "kernels/cuda/numeric.cuh"
#include "kernels/cuda/pointwise.h"

namespace kiln::kernels::cuda {

// Offsets (elements) of output element i in each of the first N inputs.
// Broadcast::dims are innermost first, so the loop indexes the parameter
// arrays with constants and nothing goes to local memory.
template <int N, typename Idx>
KILN_HD void BroadcastOffsets(const Broadcast &b, Idx i, int64_t (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k)
    off[k] = 0;
#pragma unroll
  for (int d = 0; d < Broadcast::kMaxRank; ++d) {
    if (d >= b.rank)
      break;
    const Idx dim = static_cast<Idx>(b.dims[d]);
    const Idx q = i / dim;
    const int64_t c = static_cast<int64_t>(i - q * dim);
    i = q;
#pragma unroll
    for (int k = 0; k < N; ++k)
      off[k] += c * b.strides[k][d];
  }
}

// fn(i, off) for every output element i, off[k] the element offset in input k.
template <int N, bool kSameShape, typename Idx, typename Fn>
__global__ void __launch_bounds__(kThreads) BroadcastKernel(Broadcast b, Fn fn) {
  const Idx n = static_cast<Idx>(b.numel);
  const Idx step = static_cast<Idx>(gridDim.x) * blockDim.x;
  for (Idx i = static_cast<Idx>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[N];
    if constexpr (kSameShape) {
#pragma unroll
      for (int k = 0; k < N; ++k)
        off[k] = static_cast<int64_t>(i);
    } else {
      BroadcastOffsets<N>(b, i, off);
    }
    fn(static_cast<int64_t>(i), off);
  }
}

template <int N, typename Fn>
cudaError_t LaunchBroadcast(const Broadcast &b, const Fn &fn, cudaStream_t stream) {
  if (b.numel == 0)
    return cudaSuccess;
  const unsigned grid = GridFor(b.numel);
  // The 32-bit loop stays below 2^32 after its last step (grid * threads
  // is at most 2^24).
  const bool small = b.numel < (int64_t{1} << 31);
  if (b.same_shape && small) {
    BroadcastKernel<N, true, uint32_t><<<grid, kThreads, 0, stream>>>(b, fn);
  } else if (b.same_shape) {
    BroadcastKernel<N, true, int64_t><<<grid, kThreads, 0, stream>>>(b, fn);
  } else if (small) {
    BroadcastKernel<N, false, uint32_t><<<grid, kThreads, 0, stream>>>(b, fn);
  } else {
    BroadcastKernel<N, false, int64_t><<<grid, kThreads, 0, stream>>>(b, fn);
  }
  return cudaGetLastError();
}

} // namespace kiln::kernels::cuda
