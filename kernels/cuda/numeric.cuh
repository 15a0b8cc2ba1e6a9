// Device-side scalar rules shared by the pointwise and reduction kernels:
// storage <-> compute types (f16/bf16 computed in f32), the conversions of
// Cast, and integer arithmetic that wraps. Every rule here reproduces the
// CPU kernels' (kernels/cpu/cast.cpp, wrap_arith.h) bit for bit, NaN
// payloads included, so the op oracle can compare integers and casts
// exactly.
#pragma once

#include "kernels/cuda/elem_type.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cuda/std/limits>

#include <cstdint>
#include <type_traits>

namespace kiln::kernels::cuda {

// A bool element: a distinct type so that conversions treat it as a truth
// value, not as an integer.
struct BoolByte {
  uint8_t byte;
};

// The type a storage type computes in.
template <typename T> struct ComputeOf { using type = T; };
template <> struct ComputeOf<__half> { using type = float; };
template <> struct ComputeOf<__nv_bfloat16> { using type = float; };
template <typename T> using Compute = typename ComputeOf<T>::type;

template <typename T> constexpr bool kIsFloat = std::is_floating_point_v<Compute<T>>;

// ---- f32 <-> f16/bf16, rounding to nearest even -------------------------

// NaN keeps its top payload bits and is forced quiet, as on the CPU; the
// hardware conversion would give the canonical NaN instead.
__device__ __forceinline__ __half FloatToHalf(float f) {
  if (isnan(f)) {
    const uint32_t x = __float_as_uint(f);
    const uint16_t bits = static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7c00u | 0x200u |
                                                (((x & 0x7fffffffu) >> 13) & 0x3ffu));
    return __ushort_as_half(bits);
  }
  return __float2half_rn(f);
}

__device__ __forceinline__ __nv_bfloat16 FloatToBFloat16(float f) {
  if (isnan(f))
    return __ushort_as_bfloat16(static_cast<uint16_t>((__float_as_uint(f) >> 16) | 0x40u));
  return __float2bfloat16_rn(f);
}

// Storage -> compute.
template <typename T> __device__ __forceinline__ Compute<T> Load(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return v;
  }
}

// Compute -> storage, rounding once.
template <typename T> __device__ __forceinline__ T Store(Compute<T> v) {
  if constexpr (std::is_same_v<T, __half>) {
    return FloatToHalf(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return FloatToBFloat16(v);
  } else {
    return v;
  }
}

// ---- Cast ----------------------------------------------------------------

// Float (or double) to integer: truncates toward zero, saturates at the
// integer range, NaN becomes 0.
template <typename To, typename W> __device__ __forceinline__ To FloatToInt(W v) {
  if (isnan(v))
    return 0;
  constexpr W lo = static_cast<W>(::cuda::std::numeric_limits<To>::min());
  constexpr W hi = static_cast<W>(::cuda::std::numeric_limits<To>::max());
  if (v <= lo)
    return ::cuda::std::numeric_limits<To>::min();
  if (v >= hi)
    return ::cuda::std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

// To float from the widened value: a double beyond float range becomes inf
// explicitly.
template <typename W> __device__ __forceinline__ float WideToFloat(W v) {
  if constexpr (std::is_same_v<W, double>) {
    if (v > static_cast<double>(3.402823466e38f))
      return __int_as_float(0x7f800000);
    if (v < -static_cast<double>(3.402823466e38f))
      return __int_as_float(static_cast<int>(0xff800000u));
  }
  return static_cast<float>(v);
}

// A storage value widened to an arithmetic type (half -> float, bool -> 0/1).
template <typename From> __device__ __forceinline__ auto Widen(From v) {
  if constexpr (std::is_same_v<From, BoolByte>) {
    return static_cast<uint8_t>(v.byte != 0);
  } else {
    return Load(v);
  }
}

// ONNX Cast of one element: anything to bool is "!= 0" (NaN is true);
// halves go through f32; float to integer as FloatToInt.
template <typename To, typename From> __device__ __forceinline__ To Convert(From in) {
  const auto v = Widen(in);
  using W = decltype(v);
  if constexpr (std::is_same_v<To, BoolByte>) {
    return BoolByte{static_cast<uint8_t>(v != W(0))};
  } else if constexpr (std::is_same_v<To, __half>) {
    return FloatToHalf(WideToFloat(v));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return FloatToBFloat16(WideToFloat(v));
  } else if constexpr (std::is_same_v<To, float>) {
    return WideToFloat(v);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<W>) {
    return FloatToInt<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// ---- Integer arithmetic that wraps (through the unsigned type) ----------

template <typename T> using Unsigned = std::make_unsigned_t<T>;

template <typename T> __device__ __forceinline__ T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(
        static_cast<Unsigned<T>>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b)));
  } else {
    return a + b;
  }
}

template <typename T> __device__ __forceinline__ T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(
        static_cast<Unsigned<T>>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b)));
  } else {
    return a - b;
  }
}

template <typename T> __device__ __forceinline__ T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Narrow types promote to int; multiply as unsigned so nothing overflows.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, Unsigned<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

template <typename T> __device__ __forceinline__ T WrapNeg(T a) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<Unsigned<T>>(Unsigned<T>{0} - static_cast<Unsigned<T>>(a)));
  } else {
    return -a;
  }
}

// ---- Max/Min as the CPU kernels take them --------------------------------

// Elementwise Max/Min: NaN in either operand gives NaN.
template <typename C> __device__ __forceinline__ C MaxOf(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (isnan(a) || isnan(b))
      return ::cuda::std::numeric_limits<C>::quiet_NaN();
  }
  return a < b ? b : a;
}
template <typename C> __device__ __forceinline__ C MinOf(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (isnan(a) || isnan(b))
      return ::cuda::std::numeric_limits<C>::quiet_NaN();
  }
  return b < a ? b : a;
}

// ---- Launch shape --------------------------------------------------------

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items; n > 0.
inline unsigned GridFor(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

// ---- Host-side dispatch on ElemType ----------------------------------------

template <typename T> struct TypeTag { using type = T; };

// Calls f(TypeTag<T>{}) with T the storage type of t (bool as BoolByte).
template <typename F> auto DispatchType(ElemType t, F &&f) {
  switch (t) {
  case ElemType::kF32:
    return f(TypeTag<float>{});
  case ElemType::kF16:
    return f(TypeTag<__half>{});
  case ElemType::kBF16:
    return f(TypeTag<__nv_bfloat16>{});
  case ElemType::kF64:
    return f(TypeTag<double>{});
  case ElemType::kI8:
    return f(TypeTag<int8_t>{});
  case ElemType::kU8:
    return f(TypeTag<uint8_t>{});
  case ElemType::kI32:
    return f(TypeTag<int32_t>{});
  case ElemType::kI64:
    return f(TypeTag<int64_t>{});
  case ElemType::kBool:
    break;
  }
  return f(TypeTag<BoolByte>{});
}

// The same over the numeric types only; bool gives cudaErrorInvalidValue.
template <typename F> cudaError_t DispatchNumeric(ElemType t, F &&f) {
  if (t == ElemType::kBool)
    return cudaErrorInvalidValue;
  return DispatchType(t, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, BoolByte>) {
      return cudaErrorInvalidValue;
    } else {
      return f(tag);
    }
  });
}

} // namespace kiln::kernels::cuda
