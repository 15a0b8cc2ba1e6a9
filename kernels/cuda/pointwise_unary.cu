// Same-shape ops of one tensor: unary math (kernels/unary_ops.def, computed
// by kernels/unary_math.h as on the CPU), Not, IsNaN, Clip and Cast
// (declared in pointwise.h). Grid-stride loops over contiguous elements.
#include "kernels/cuda/numeric.cuh"
#include "kernels/cuda/pointwise.h"
#include "kernels/unary_math.h"

namespace kiln::kernels::cuda {
namespace {

// ---- Scalar rules -----------------------------------------------------------

// The extremes an absent Clip bound stands for.
template <typename C> __device__ __forceinline__ C Lowest() {
  if constexpr (std::is_floating_point_v<C>)
    return -::cuda::std::numeric_limits<C>::infinity();
  else
    return ::cuda::std::numeric_limits<C>::lowest();
}
template <typename C> __device__ __forceinline__ C Highest() {
  if constexpr (std::is_floating_point_v<C>)
    return ::cuda::std::numeric_limits<C>::infinity();
  else
    return ::cuda::std::numeric_limits<C>::max();
}

// ---- Kernels ------------------------------------------------------------------

#define KILN_GRID_STRIDE(i, n)                                                                     \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);           \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <typename T>
__global__ void __launch_bounds__(kThreads)
    UnaryKernel(UnaryOp op, const T *__restrict__ x, T *y, int64_t n) {
  KILN_GRID_STRIDE(i, n) {
    const Compute<T> v = Load(x[i]);
    if constexpr (kIsFloat<T>) {
      y[i] = Store<T>(UnaryFloat(op, v));
    } else {
      y[i] = UnaryInt(op, v);
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    NotKernel(const uint8_t *__restrict__ x, uint8_t *y, int64_t n) {
  KILN_GRID_STRIDE(i, n) { y[i] = x[i] == 0; }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    IsNaNKernel(const T *__restrict__ x, uint8_t *y, int64_t n) {
  KILN_GRID_STRIDE(i, n) { y[i] = isnan(Load(x[i])); }
}

// An absent bound (null) is the type's extreme.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    ClipKernel(const T *__restrict__ x, const T *lo, const T *hi, T *y, int64_t n) {
  using C = Compute<T>;
  const C l = lo ? Load(*lo) : Lowest<C>();
  const C h = hi ? Load(*hi) : Highest<C>();
  KILN_GRID_STRIDE(i, n) {
    const C v0 = Load(x[i]);
    const C v = v0 < l ? l : v0;
    y[i] = Store<T>(v > h ? h : v);
  }
}

template <typename From, typename To>
__global__ void __launch_bounds__(kThreads)
    CastKernel(const From *__restrict__ x, To *y, int64_t n) {
  KILN_GRID_STRIDE(i, n) { y[i] = Convert<To>(x[i]); }
}

#undef KILN_GRID_STRIDE

} // namespace

bool UnaryDefined(UnaryOp op, ElemType t) {
  if (IsFloatType(t))
    return true;
  if (t == ElemType::kBool)
    return false;
  return UnaryOnIntegers(op);
}

cudaError_t Unary(UnaryOp op, ElemType t, const void *x, void *y, int64_t n, cudaStream_t stream) {
  if (!UnaryDefined(op, t))
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    UnaryKernel<T><<<GridFor(n), kThreads, 0, stream>>>(op, static_cast<const T *>(x),
                                                        static_cast<T *>(y), n);
    return cudaGetLastError();
  });
}

cudaError_t LogicalNot(const uint8_t *x, uint8_t *y, int64_t n, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  NotKernel<<<GridFor(n), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t IsNaN(ElemType t, const void *x, uint8_t *y, int64_t n, cudaStream_t stream) {
  if (!IsFloatType(t))
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloat<T>) {
      IsNaNKernel<T><<<GridFor(n), kThreads, 0, stream>>>(static_cast<const T *>(x), y, n);
      return cudaGetLastError();
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

cudaError_t Clip(ElemType t, const void *x, const void *lo, const void *hi, void *y, int64_t n,
                 cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ClipKernel<T>
        <<<GridFor(n), kThreads, 0, stream>>>(static_cast<const T *>(x), static_cast<const T *>(lo),
                                              static_cast<const T *>(hi), static_cast<T *>(y), n);
    return cudaGetLastError();
  });
}

cudaError_t Cast(ElemType from, const void *x, ElemType to, void *y, int64_t n,
                 cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  return DispatchType(from, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    return DispatchType(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      CastKernel<From, To><<<GridFor(n), kThreads, 0, stream>>>(static_cast<const From *>(x),
                                                                static_cast<To *>(y), n);
      return cudaGetLastError();
    });
  });
}

} // namespace kiln::kernels::cuda
