// Softmax and LogSoftmax over one axis (declared in reduce.h), numerically
// stable: the row's max is subtracted before exp. x is [outer, len, inner].
// inner == 1 (the last axis, attention scores and logits) makes contiguous
// rows: a warp per row, or a block per row when rows are long. Otherwise a
// thread per (outer, inner) column walks the axis by stride `inner`, which
// keeps neighbouring threads on neighbouring elements.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/numeric.cuh"
#include "kernels/cuda/reduce.h"

namespace kiln::kernels::cuda {
namespace {

// f32 for f32/f16/bf16, f64 for f64.
template <typename T> using Acc = Compute<T>;

// The CPU's max: NaN is skipped here, but then reaches every result
// through exp and the sum, as there.
template <typename A> struct MaxOp {
  __device__ __forceinline__ A operator()(A a, A b) const { return b > a ? b : a; }
};
template <typename A> struct SumOp {
  __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};

__device__ __forceinline__ float Exp(float v) { return expf(v); }
__device__ __forceinline__ double Exp(double v) { return exp(v); }
__device__ __forceinline__ float Log(float v) { return logf(v); }
__device__ __forceinline__ double Log(double v) { return log(v); }

template <typename A> __device__ __forceinline__ A NegInf() {
  return -::cuda::std::numeric_limits<A>::infinity();
}

// Writes one row (or column) given its max and sum of exponentials; element
// i of it is at p[i * stride].
template <typename T>
__device__ __forceinline__ void WriteOne(const T *x, T *y, int64_t i, Acc<T> max, Acc<T> scale,
                                         Acc<T> shift, bool log) {
  const Acc<T> v = Load(x[i]);
  y[i] = Store<T>(log ? v - shift : Exp(v - max) * scale);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    RowWarpKernel(const T *x, T *y, int64_t rows, int64_t len, bool log) {
  using A = Acc<T>;
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
       row < rows; row += warps) {
    const T *px = x + row * len;
    T *py = y + row * len;
    A max = NegInf<A>();
    for (int64_t i = lane; i < len; i += kWarp)
      max = MaxOp<A>()(max, Load(px[i]));
    max = WarpAllReduce(max, MaxOp<A>());
    A sum = 0;
    for (int64_t i = lane; i < len; i += kWarp)
      sum += Exp(Load(px[i]) - max);
    sum = WarpAllReduce(sum, SumOp<A>());
    const A scale = A(1) / sum, shift = max + Log(sum);
    for (int64_t i = lane; i < len; i += kWarp)
      WriteOne(px, py, i, max, scale, shift, log);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    RowBlockKernel(const T *x, T *y, int64_t rows, int64_t len, bool log) {
  using A = Acc<T>;
  __shared__ A shared[kWarp];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *px = x + row * len;
    T *py = y + row * len;
    A max = NegInf<A>();
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
      max = MaxOp<A>()(max, Load(px[i]));
    max = BlockAllReduce(max, MaxOp<A>(), NegInf<A>(), shared);
    A sum = 0;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
      sum += Exp(Load(px[i]) - max);
    sum = BlockAllReduce(sum, SumOp<A>(), A(0), shared);
    const A scale = A(1) / sum, shift = max + Log(sum);
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
      WriteOne(px, py, i, max, scale, shift, log);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    ColumnKernel(const T *x, T *y, int64_t outer, int64_t len, int64_t inner, bool log) {
  using A = Acc<T>;
  const int64_t columns = outer * inner;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < columns;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner;
    const int64_t base = o * len * inner + (c - o * inner);
    const T *px = x + base;
    T *py = y + base;
    A max = NegInf<A>();
    for (int64_t i = 0; i < len; ++i)
      max = MaxOp<A>()(max, Load(px[i * inner]));
    A sum = 0;
    for (int64_t i = 0; i < len; ++i)
      sum += Exp(Load(px[i * inner]) - max);
    const A scale = A(1) / sum, shift = max + Log(sum);
    for (int64_t i = 0; i < len; ++i)
      WriteOne(px, py, i * inner, max, scale, shift, log);
  }
}

unsigned Blocks(int64_t n) { return static_cast<unsigned>(n < 65536 ? n : 65536); }

} // namespace

cudaError_t Softmax(ElemType t, const void *x, void *y, int64_t outer, int64_t len, int64_t inner,
                    bool log, cudaStream_t stream) {
  if (!IsFloatType(t))
    return cudaErrorInvalidValue;
  if (outer == 0 || len == 0 || inner == 0)
    return cudaSuccess;
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloat<T>) {
      const T *px = static_cast<const T *>(x);
      T *py = static_cast<T *>(y);
      if (inner == 1 && len >= 1024) {
        RowBlockKernel<T><<<Blocks(outer), kThreads, 0, stream>>>(px, py, outer, len, log);
      } else if (inner == 1) {
        constexpr int kRowsPerBlock = kThreads / kWarp;
        RowWarpKernel<T>
            <<<Blocks((outer + kRowsPerBlock - 1) / kRowsPerBlock), kThreads, 0, stream>>>(
                px, py, outer, len, log);
      } else {
        ColumnKernel<T>
            <<<GridFor(outer * inner), kThreads, 0, stream>>>(px, py, outer, len, inner, log);
      }
      return cudaGetLastError();
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

} // namespace kiln::kernels::cuda
