// Warp and block reductions of one value per thread, for the reduction and
// softmax kernels. `Op` is a functor combining two values.
#pragma once

#include <cuda_runtime.h>

namespace kiln::kernels::cuda {

inline constexpr int kWarp = 32;

// Every lane ends with the combination of all 32 lanes' values.
template <typename A, typename Op> __device__ __forceinline__ A WarpAllReduce(A v, Op op) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Every thread of the block ends with the combination of all threads'
// values. blockDim.x is a multiple of 32; `shared` holds 32 values; every
// thread must call it (it synchronizes), and it may be called again at once.
template <typename A, typename Op>
__device__ __forceinline__ A BlockAllReduce(A v, Op op, A identity, A *shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = WarpAllReduce(v, op);
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / kWarp;
  A w = lane < warps ? shared[lane] : identity;
  w = WarpAllReduce(w, op);
  // The next call may overwrite `shared` only after every warp has read it.
  __syncthreads();
  return w;
}

} // namespace kiln::kernels::cuda
