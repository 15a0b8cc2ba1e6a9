// Scalar rules shared by the pointwise and reduction kernels: storage <->
// compute types (f16/bf16 computed in f32), the conversions of Cast, integer
// arithmetic that wraps, Max/Min, integer division and Pow. Every rule here
// reproduces the CPU kernels' (kernels/cpu/pointwise_cast.cpp, elementwise.cpp,
// kernels/wrap_arith.h) bit for bit, NaN payloads included, so the op oracle can
// compare integers and casts exactly.
#pragma once

#include "kernels/cuda/elem_type.h"
#include "kernels/host_device.h"
#include "kernels/wrap_arith.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cuda/std/bit>
#include <cuda/std/cmath>
#include <cuda/std/limits>

#include <cstdint>
#include <type_traits>

// Scalar rules are host-device (KILN_HD), so host tests can check them
// against the CPU kernels without a GPU (test/unit/kernels_cuda/).

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
KILN_HD __half FloatToHalf(float f) {
  if (::cuda::std::isnan(f)) {
    const uint32_t x = ::cuda::std::bit_cast<uint32_t>(f);
    const uint16_t bits = static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7c00u | 0x200u |
                                                (((x & 0x7fffffffu) >> 13) & 0x3ffu));
    return __ushort_as_half(bits);
  }
  return __float2half_rn(f);
}

KILN_HD __nv_bfloat16 FloatToBFloat16(float f) {
  if (::cuda::std::isnan(f))
    return __ushort_as_bfloat16(
        static_cast<uint16_t>((::cuda::std::bit_cast<uint32_t>(f) >> 16) | 0x40u));
  return __float2bfloat16_rn(f);
}

// f16 -> f32 is exact; a NaN keeps its payload unquieted, as on the CPU.
KILN_HD float HalfToFloat(__half h) {
  const uint32_t bits = __half_as_ushort(h);
  if ((bits & 0x7fffu) > 0x7c00u)
    return ::cuda::std::bit_cast<float>(((bits & 0x8000u) << 16) | 0x7f800000u |
                                        ((bits & 0x3ffu) << 13));
  return __half2float(h);
}

KILN_HD float BFloat16ToFloat(__nv_bfloat16 b) {
  return ::cuda::std::bit_cast<float>(static_cast<uint32_t>(__bfloat16_as_ushort(b)) << 16);
}

// Storage -> compute.
template <typename T> KILN_HD Compute<T> Load(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return HalfToFloat(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return BFloat16ToFloat(v);
  } else {
    return v;
  }
}

// Compute -> storage, rounding once.
template <typename T> KILN_HD T Store(Compute<T> v) {
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
template <typename To, typename W> KILN_HD To FloatToInt(W v) {
  if (::cuda::std::isnan(v))
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
template <typename W> KILN_HD float WideToFloat(W v) {
  if constexpr (std::is_same_v<W, double>) {
    constexpr double kMax = static_cast<double>(::cuda::std::numeric_limits<float>::max());
    if (v > kMax)
      return ::cuda::std::numeric_limits<float>::infinity();
    if (v < -kMax)
      return -::cuda::std::numeric_limits<float>::infinity();
  }
  return static_cast<float>(v);
}

// A storage value widened to an arithmetic type (half -> float, bool -> 0/1).
template <typename From> KILN_HD auto Widen(From v) {
  if constexpr (std::is_same_v<From, BoolByte>) {
    return static_cast<uint8_t>(v.byte != 0);
  } else {
    return Load(v);
  }
}

// ONNX Cast of one element: anything to bool is "!= 0" (NaN is true);
// halves go through f32; float to integer as FloatToInt.
template <typename To, typename From> KILN_HD To Convert(From in) {
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

// Integer arithmetic that wraps: kernels/wrap_arith.h (WrapAdd, WrapSub,
// WrapMul, WrapNeg), shared with the CPU kernels.

// ---- Max/Min as the CPU kernels take them --------------------------------

// Elementwise Max/Min: NaN in either operand gives NaN.
template <typename C> KILN_HD C MaxOf(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (::cuda::std::isnan(a) || ::cuda::std::isnan(b))
      return ::cuda::std::numeric_limits<C>::quiet_NaN();
  }
  return a < b ? b : a;
}
template <typename C> KILN_HD C MinOf(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (::cuda::std::isnan(a) || ::cuda::std::isnan(b))
      return ::cuda::std::numeric_limits<C>::quiet_NaN();
  }
  return b < a ? b : a;
}

// ---- Division and Pow ------------------------------------------------------

template <typename C> KILN_HD C SafeDiv(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0)
      return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1)
        return WrapNeg(a); // avoids MIN / -1 overflow
    }
    return static_cast<C>(a / b);
  } else {
    return a / b;
  }
}

// Pow in float or double. The exponents transformer graphs use (x^2, x^3,
// x^0.5 in norms and GELU) take the closed forms the CPU takes.
template <typename C> KILN_HD C PowFloat(C x, C y) {
  if (y == C(2))
    return x * x;
  if (y == C(3))
    return x * x * x;
  if (y == C(1))
    return x;
  if constexpr (std::is_same_v<C, float>) {
    if (y == 0.5f)
      return sqrtf(x);
    return powf(x, y);
  } else {
    if (y == 0.5)
      return sqrt(x);
    return pow(x, y);
  }
}

// The high 64 bits of a 64 x 64-bit product.
KILN_HD uint64_t MulHi64(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

// A double truncated toward zero and saturated to T; NaN gives 0.
template <typename T> KILN_HD T SaturateFromDouble(double v) {
  if (::cuda::std::isnan(v))
    return 0;
  constexpr double lo = static_cast<double>(::cuda::std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(::cuda::std::numeric_limits<T>::max());
  if (v <= lo)
    return ::cuda::std::numeric_limits<T>::min();
  if (v >= hi)
    return ::cuda::std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// Integer Pow: the CPU's pow(double(a), double(b)) truncated and saturated
// to T. pow of integers is exact in double while it fits, so the power is
// formed exactly in 64 bits (a device pow() may be an ulp off) and rounded
// to double once, as pow() rounds it.
template <typename T> KILN_HD T IntPow(T a_in, T b_in) {
  const int64_t a = a_in, b = b_in;
  if (b < 0) {
    // |a|^b for b < 0: 1/0 = inf for a = 0, +-1 for |a| = 1, else below 1.
    if (a == 0)
      return ::cuda::std::numeric_limits<T>::max();
    if (a == 1)
      return 1;
    if (a == -1)
      return static_cast<T>((b & 1) ? -1 : 1);
    return 0;
  }
  uint64_t base = a < 0 ? uint64_t{0} - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  uint64_t mag = 1, e = static_cast<uint64_t>(b);
  bool overflow = false;
  while (e != 0) {
    if (e & 1) {
      if (MulHi64(mag, base) != 0) {
        overflow = true;
        break;
      }
      mag *= base;
    }
    e >>= 1;
    if (e != 0) {
      // Another factor of at least base^2 is still to come.
      if (MulHi64(base, base) != 0) {
        overflow = true;
        break;
      }
      base *= base;
    }
  }
  const double m =
      overflow ? ::cuda::std::numeric_limits<double>::infinity() : static_cast<double>(mag);
  return SaturateFromDouble<T>(a < 0 && (b & 1) ? -m : m);
}

template <typename T> KILN_HD T PowOf(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    return IntPow(x, y);
  } else {
    return PowFloat(x, y);
  }
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
