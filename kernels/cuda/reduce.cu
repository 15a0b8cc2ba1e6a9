// ReduceSum/Mean/Max/Min over any set of dims (declared in reduce.h).
//
// The input's dims are grouped (unit dims dropped, neighbours of the same
// kind merged) into kept and reduced groups. One reduced group that is
// innermost makes contiguous rows: a warp per row, or a block per row when
// rows are long. Any other layout takes the general kernels, which walk the
// reduced groups by strides: a thread per output when there are many
// outputs or few values each, else a block per output.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/numeric.cuh"
#include "kernels/cuda/reduce.h"
#include "kernels/wrap_arith.h"

namespace kiln::kernels::cuda {
namespace {

// The accumulator: f32 for f32/f16/bf16, f64 for f64, i64 for integers
// (sums wrap through u64; truncating to T afterwards gives T's wrapped sum).
template <typename T> using Acc = std::conditional_t<kIsFloat<T>, Compute<T>, int64_t>;

template <typename A> struct Combine {
  ReduceOp op;
  __device__ __forceinline__ A operator()(A a, A b) const {
    bool nan_b = false;
    if constexpr (std::is_floating_point_v<A>)
      nan_b = isnan(b);
    switch (op) {
    case ReduceOp::kMax:
      return (b > a || nan_b) ? b : a;
    case ReduceOp::kMin:
      return (b < a || nan_b) ? b : a;
    default:
      if constexpr (std::is_floating_point_v<A>)
        return a + b;
      else
        return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    }
  }
};

// The value of an empty reduction before Finish: 0, or the type's lowest
// (max) or highest (min) value, -inf/+inf for floats.
template <typename T> __device__ __forceinline__ Acc<T> Identity(ReduceOp op) {
  using A = Acc<T>;
  if (op == ReduceOp::kSum || op == ReduceOp::kMean)
    return A(0);
  if constexpr (kIsFloat<T>) {
    const A inf = ::cuda::std::numeric_limits<A>::infinity();
    return op == ReduceOp::kMax ? -inf : inf;
  } else {
    return op == ReduceOp::kMax ? A(::cuda::std::numeric_limits<T>::lowest())
                                : A(::cuda::std::numeric_limits<T>::max());
  }
}

template <typename T> __device__ __forceinline__ Acc<T> ToAcc(T v) {
  return static_cast<Acc<T>>(Load(v));
}

// The result from the accumulated value: a float mean divides once (0/0 is
// the NaN of an empty mean); an integer mean truncates T's wrapped sum.
template <typename T> __device__ __forceinline__ T Finish(ReduceOp op, Acc<T> a, int64_t count) {
  if constexpr (kIsFloat<T>) {
    if (op == ReduceOp::kMean)
      a /= static_cast<Acc<T>>(count);
    return Store<T>(a);
  } else {
    const T v = static_cast<T>(a);
    if (op != ReduceOp::kMean)
      return v;
    return count == 0 ? T(0) : static_cast<T>(static_cast<int64_t>(v) / count);
  }
}

// Kept and reduced groups, innermost first, with their element strides in x.
struct ReduceLayout {
  int kept_rank = 0, red_rank = 0;
  int64_t kept_dims[kMaxReduceGroups] = {}, kept_strides[kMaxReduceGroups] = {};
  int64_t red_dims[kMaxReduceGroups] = {}, red_strides[kMaxReduceGroups] = {};
  int64_t outputs = 1, count = 1;
};

bool MakeLayout(const std::vector<int64_t> &shape, const std::vector<bool> &reduce,
                ReduceLayout *l) {
  std::vector<int64_t> sizes;
  std::vector<bool> reduced;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduce[d])
      l->count *= shape[d];
    else
      l->outputs *= shape[d];
    if (shape[d] == 1)
      continue;
    if (!reduced.empty() && reduced.back() == reduce[d]) {
      sizes.back() *= shape[d];
    } else {
      sizes.push_back(shape[d]);
      reduced.push_back(reduce[d]);
    }
  }
  int64_t stride = 1;
  for (int g = static_cast<int>(sizes.size()) - 1; g >= 0; --g) {
    int &rank = reduced[g] ? l->red_rank : l->kept_rank;
    if (rank == kMaxReduceGroups)
      return false;
    (reduced[g] ? l->red_dims : l->kept_dims)[rank] = sizes[g];
    (reduced[g] ? l->red_strides : l->kept_strides)[rank] = stride;
    ++rank;
    stride *= sizes[g];
  }
  return true;
}

// Offset in x of the i-th combination of `rank` dims (innermost first).
__device__ __forceinline__ int64_t OffsetOf(int64_t i, int rank, const int64_t *dims,
                                            const int64_t *strides) {
  int64_t off = 0;
#pragma unroll
  for (int d = 0; d < kMaxReduceGroups; ++d) {
    if (d >= rank)
      break;
    const int64_t q = i / dims[d];
    off += (i - q * dims[d]) * strides[d];
    i = q;
  }
  return off;
}

// ---- Contiguous rows ----------------------------------------------------------

template <typename T>
__global__ void __launch_bounds__(kThreads)
    RowWarpKernel(ReduceOp op, const T *__restrict__ x, T *__restrict__ y, int64_t rows,
                  int64_t count) {
  const Combine<Acc<T>> combine{op};
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
       row < rows; row += warps) {
    const T *p = x + row * count;
    Acc<T> acc = Identity<T>(op);
    for (int64_t i = lane; i < count; i += kWarp)
      acc = combine(acc, ToAcc(p[i]));
    acc = WarpAllReduce(acc, combine);
    if (lane == 0)
      y[row] = Finish<T>(op, acc, count);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    RowBlockKernel(ReduceOp op, const T *__restrict__ x, T *__restrict__ y, int64_t rows,
                   int64_t count) {
  __shared__ Acc<T> shared[kWarp];
  const Combine<Acc<T>> combine{op};
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *p = x + row * count;
    Acc<T> acc = Identity<T>(op);
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
      acc = combine(acc, ToAcc(p[i]));
    acc = BlockAllReduce(acc, combine, Identity<T>(op), shared);
    if (threadIdx.x == 0)
      y[row] = Finish<T>(op, acc, count);
  }
}

// ---- Any layout ---------------------------------------------------------------

// A thread per output; the reduced groups walked as an odometer, so no
// division per value.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    GeneralThreadKernel(ReduceOp op, const T *__restrict__ x, T *__restrict__ y, ReduceLayout l) {
  const Combine<Acc<T>> combine{op};
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < l.outputs;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const T *p = x + OffsetOf(o, l.kept_rank, l.kept_dims, l.kept_strides);
    Acc<T> acc = Identity<T>(op);
    int64_t counter[kMaxReduceGroups] = {};
    int64_t off = 0;
    for (int64_t r = 0; r < l.count; ++r) {
      acc = combine(acc, ToAcc(p[off]));
#pragma unroll
      for (int d = 0; d < kMaxReduceGroups; ++d) {
        if (d >= l.red_rank)
          break;
        off += l.red_strides[d];
        if (++counter[d] < l.red_dims[d])
          break;
        counter[d] = 0;
        off -= l.red_strides[d] * l.red_dims[d];
      }
    }
    y[o] = Finish<T>(op, acc, l.count);
  }
}

// A block per output, for few outputs with many values each.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    GeneralBlockKernel(ReduceOp op, const T *__restrict__ x, T *__restrict__ y, ReduceLayout l) {
  __shared__ Acc<T> shared[kWarp];
  const Combine<Acc<T>> combine{op};
  for (int64_t o = blockIdx.x; o < l.outputs; o += gridDim.x) {
    const T *p = x + OffsetOf(o, l.kept_rank, l.kept_dims, l.kept_strides);
    Acc<T> acc = Identity<T>(op);
    for (int64_t r = threadIdx.x; r < l.count; r += blockDim.x)
      acc = combine(acc, ToAcc(p[OffsetOf(r, l.red_rank, l.red_dims, l.red_strides)]));
    acc = BlockAllReduce(acc, combine, Identity<T>(op), shared);
    if (threadIdx.x == 0)
      y[o] = Finish<T>(op, acc, l.count);
  }
}

unsigned Blocks(int64_t n) { return static_cast<unsigned>(n < 65536 ? n : 65536); }

// CumSum: a thread per line of x viewed as [outer, len, inner], summing in
// Acc<T> (f32 for halves; integers wrap through u64).
template <typename T>
__global__ void CumSumKernel(const T *x, T *y, int64_t lines, int64_t len, int64_t inner,
                             bool exclusive, bool reverse) {
  for (int64_t l = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; l < lines;
       l += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t base = l / inner * len * inner + l % inner;
    Acc<T> sum = Acc<T>(0);
    for (int64_t n = 0; n < len; ++n) {
      const int64_t i = base + (reverse ? len - 1 - n : n) * inner;
      const Acc<T> v = ToAcc(x[i]);
      const Acc<T> before = sum;
      sum = WrapAdd(sum, v);
      const Acc<T> out = exclusive ? before : sum;
      if constexpr (kIsFloat<T>)
        y[i] = Store<T>(out);
      else
        y[i] = static_cast<T>(out);
    }
  }
}

} // namespace

cudaError_t CumSum(ElemType t, const void *x, void *y, int64_t outer, int64_t len, int64_t inner,
                   bool exclusive, bool reverse, cudaStream_t stream) {
  const int64_t lines = outer * inner;
  if (lines == 0 || len == 0)
    return cudaSuccess;
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    CumSumKernel<T><<<GridFor(lines), kThreads, 0, stream>>>(
        static_cast<const T *>(x), static_cast<T *>(y), lines, len, inner, exclusive, reverse);
    return cudaGetLastError();
  });
}

bool ReduceShapeSupported(const std::vector<int64_t> &shape, const std::vector<bool> &reduce) {
  ReduceLayout l;
  return shape.size() == reduce.size() && MakeLayout(shape, reduce, &l);
}

cudaError_t Reduce(ReduceOp op, ElemType t, const void *x, const std::vector<int64_t> &shape,
                   const std::vector<bool> &reduce, void *y, cudaStream_t stream) {
  ReduceLayout l;
  if (shape.size() != reduce.size() || !MakeLayout(shape, reduce, &l))
    return cudaErrorInvalidValue;
  if (l.outputs == 0)
    return cudaSuccess;
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *px = static_cast<const T *>(x);
    T *py = static_cast<T *>(y);
    const bool rows = l.red_rank == 1 && l.red_strides[0] == 1 && l.count > 0;
    if (rows && l.count >= 1024) {
      RowBlockKernel<T><<<Blocks(l.outputs), kThreads, 0, stream>>>(op, px, py, l.outputs, l.count);
    } else if (rows) {
      constexpr int kRowsPerBlock = kThreads / kWarp;
      RowWarpKernel<T>
          <<<Blocks((l.outputs + kRowsPerBlock - 1) / kRowsPerBlock), kThreads, 0, stream>>>(
              op, px, py, l.outputs, l.count);
    } else if (l.outputs >= 2048 || l.count < 256) {
      GeneralThreadKernel<T><<<GridFor(l.outputs), kThreads, 0, stream>>>(op, px, py, l);
    } else {
      GeneralBlockKernel<T><<<Blocks(l.outputs), kThreads, 0, stream>>>(op, px, py, l);
    }
    return cudaGetLastError();
  });
}

} // namespace kiln::kernels::cuda
