// Same-shape ops of one tensor: unary math, Not, IsNaN, Clip and Cast
// (declared in pointwise.h). Grid-stride loops over contiguous elements.
#include "kernels/cuda/numeric.cuh"
#include "kernels/cuda/pointwise.h"

#include <cstring>

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

// ---- Kernels ------------------------------------------------------------------

#define KILN_GRID_STRIDE(i, n)                                                                     \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);          \
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

// Bounds come from device memory (lo_ptr/hi_ptr) when given, else lo/hi.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    ClipKernel(const T *__restrict__ x, T lo, T hi, const T *lo_ptr, const T *hi_ptr, T *y,
               int64_t n) {
  const Compute<T> l = Load(lo_ptr ? *lo_ptr : lo);
  const Compute<T> h = Load(hi_ptr ? *hi_ptr : hi);
  KILN_GRID_STRIDE(i, n) {
    const Compute<T> v0 = Load(x[i]);
    const Compute<T> v = v0 < l ? l : v0;
    y[i] = Store<T>(v > h ? h : v);
  }
}

template <typename From, typename To>
__global__ void __launch_bounds__(kThreads)
    CastKernel(const From *__restrict__ x, To *y, int64_t n) {
  KILN_GRID_STRIDE(i, n) { y[i] = Convert<To>(x[i]); }
}

#undef KILN_GRID_STRIDE

// The extremes an absent Clip bound stands for.
template <typename T> T LowestOf() {
  if constexpr (std::is_same_v<T, __half>) {
    return __ushort_as_half(0xfc00); // -inf
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __ushort_as_bfloat16(0xff80);
  } else if constexpr (std::is_floating_point_v<T>) {
    return -::cuda::std::numeric_limits<T>::infinity();
  } else {
    return ::cuda::std::numeric_limits<T>::lowest();
  }
}
template <typename T> T HighestOf() {
  if constexpr (std::is_same_v<T, __half>) {
    return __ushort_as_half(0x7c00); // +inf
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __ushort_as_bfloat16(0x7f80);
  } else if constexpr (std::is_floating_point_v<T>) {
    return ::cuda::std::numeric_limits<T>::infinity();
  } else {
    return ::cuda::std::numeric_limits<T>::max();
  }
}

template <typename T> T FromBytes(const unsigned char *bytes) {
  T v;
  memcpy(&v, bytes, sizeof(T));
  return v;
}

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

cudaError_t Clip(ElemType t, const void *x, const ClipBounds &bounds, void *y, int64_t n,
                 cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T lo = bounds.has_lo_value ? FromBytes<T>(bounds.lo_value) : LowestOf<T>();
    const T hi = bounds.has_hi_value ? FromBytes<T>(bounds.hi_value) : HighestOf<T>();
    ClipKernel<T><<<GridFor(n), kThreads, 0, stream>>>(
        static_cast<const T *>(x), lo, hi, static_cast<const T *>(bounds.lo_device),
        static_cast<const T *>(bounds.hi_device), static_cast<T *>(y), n);
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
