// Same-shape ops of one tensor: unary math, Not, IsNaN, Clip and Cast
// (declared in pointwise.h). Grid-stride loops over contiguous elements.
#include "kernels/cuda/numeric.cuh"
#include "kernels/cuda/pointwise.h"

namespace kiln::kernels::cuda {
namespace {

// ---- Scalar rules -----------------------------------------------------------

// Float math in float or double, as the CPU's unary kernels
// (kernels/cpu/unary.cpp) write it; accurate library calls, no fast math.
template <typename C> __device__ __forceinline__ C UnaryFloat(UnaryOp op, C v) {
  constexpr bool f32 = std::is_same_v<C, float>;
  switch (op) {
  case UnaryOp::kSqrt:
    if constexpr (f32)
      return sqrtf(v);
    else
      return sqrt(v);
  case UnaryOp::kReciprocal:
    return C(1) / v;
  case UnaryOp::kNeg:
    return -v;
  case UnaryOp::kExp:
    if constexpr (f32)
      return expf(v);
    else
      return exp(v);
  case UnaryOp::kLog:
    if constexpr (f32)
      return logf(v);
    else
      return log(v);
  case UnaryOp::kErf:
    if constexpr (f32)
      return erff(v);
    else
      return erf(v);
  case UnaryOp::kTanh:
    if constexpr (f32)
      return tanhf(v);
    else
      return tanh(v);
  case UnaryOp::kSigmoid:
    // exp(-v) overflows to inf for very negative v, giving exactly 0.
    if constexpr (f32)
      return 1.0f / (1.0f + expf(-v));
    else
      return 1.0 / (1.0 + exp(-v));
  case UnaryOp::kRelu:
    // A compare, so NaN passes through.
    return v < C(0) ? C(0) : v;
  case UnaryOp::kAbs:
    if constexpr (f32)
      return fabsf(v);
    else
      return fabs(v);
  case UnaryOp::kFloor:
    if constexpr (f32)
      return floorf(v);
    else
      return floor(v);
  case UnaryOp::kCeil:
    if constexpr (f32)
      return ceilf(v);
    else
      return ceil(v);
  case UnaryOp::kSin:
    if constexpr (f32)
      return sinf(v);
    else
      return sin(v);
  case UnaryOp::kCos:
    if constexpr (f32)
      return cosf(v);
    else
      return cos(v);
  }
  return v;
}

// Neg, Abs and Relu on integers; negation wraps (-MIN is MIN).
template <typename C> __device__ __forceinline__ C UnaryInteger(UnaryOp op, C v) {
  switch (op) {
  case UnaryOp::kNeg:
    return WrapNeg(v);
  case UnaryOp::kAbs:
    if constexpr (std::is_signed_v<C>)
      return v < 0 ? WrapNeg(v) : v;
    else
      return v;
  default: // kRelu
    if constexpr (std::is_signed_v<C>)
      return v < 0 ? C(0) : v;
    else
      return v;
  }
}

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
      y[i] = UnaryInteger(op, v);
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
  return op == UnaryOp::kNeg || op == UnaryOp::kAbs || op == UnaryOp::kRelu;
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
