#include "kernels/cpu/pointwise_cast.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace kiln::kernels {

namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

} // namespace

uint16_t FloatToHalf(float f) {
  const uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) {
    // Inf stays inf; NaN keeps its top payload bits and is forced quiet.
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (mag > 0x7f800000u ? 0x200u | ((mag >> 13) & 0x3ffu) : 0u));
  }
  if (mag >= 0x477ff000u)
    return static_cast<uint16_t>(sign | 0x7c00u); // rounds past 65504
  if (mag < 0x38800000u) {
    // Below the smallest normal half (2^-14): adding 0.5 puts the value's
    // 2^-24 multiples in the low mantissa bits, rounded to nearest even by
    // the FPU itself.
    const float shifted = BitsFloat(mag) + 0.5f;
    return static_cast<uint16_t>(sign | (FloatBits(shifted) - FloatBits(0.5f)));
  }
  // Normal: rebias the exponent (127 -> 15) and round 23 mantissa bits to
  // 10, ties to even; a carry correctly bumps the exponent.
  const uint32_t odd = (mag >> 13) & 1u;
  mag = mag - (112u << 23) + 0xfffu + odd;
  return static_cast<uint16_t>(sign | (mag >> 13));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f)
    return BitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in float.
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t FloatToBFloat16(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

float BFloat16ToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

namespace {

// Storage wrappers so the 2-byte float formats and bool get their own
// conversion rules instead of behaving like integers.
struct Half {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};
struct Bool {
  uint8_t byte;
};

template <typename T> constexpr bool kIsWideFloat = std::is_floating_point_v<T>;

// Any type to a value of an arithmetic "wide" form (float, double or an
// integer), undoing the storage wrappers.
template <typename From> auto Widen(From v) {
  if constexpr (std::is_same_v<From, Half>) {
    return HalfToFloat(v.bits);
  } else if constexpr (std::is_same_v<From, BF16>) {
    return BFloat16ToFloat(v.bits);
  } else if constexpr (std::is_same_v<From, Bool>) {
    return static_cast<uint8_t>(v.byte != 0);
  } else {
    return v;
  }
}

template <typename To, typename W> To FloatToInt(W v) {
  if (std::isnan(v))
    return 0;
  constexpr W lo = static_cast<W>(std::numeric_limits<To>::min());
  constexpr W hi = static_cast<W>(std::numeric_limits<To>::max());
  if (v <= lo)
    return std::numeric_limits<To>::min();
  if (v >= hi)
    return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

template <typename From, typename To> To ConvertOne(From in) {
  const auto v = Widen(in);
  using W = decltype(v);
  if constexpr (std::is_same_v<To, Bool>) {
    return Bool{static_cast<uint8_t>(v != W(0))}; // NaN != 0 holds, so NaN is true
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half{FloatToHalf(ConvertOne<W, float>(v))};
  } else if constexpr (std::is_same_v<To, BF16>) {
    return BF16{FloatToBFloat16(ConvertOne<W, float>(v))};
  } else if constexpr (std::is_integral_v<To> && kIsWideFloat<W>) {
    return FloatToInt<To>(v);
  } else if constexpr (std::is_same_v<To, float> && std::is_same_v<W, double>) {
    // Finite doubles beyond float range become inf explicitly (not UB).
    if (v > static_cast<double>(std::numeric_limits<float>::max()))
      return std::numeric_limits<float>::infinity();
    if (v < -static_cast<double>(std::numeric_limits<float>::max()))
      return -std::numeric_limits<float>::infinity();
    return static_cast<float>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename From, typename To> void ConvertAll(const void *src, void *dst, int64_t n) {
  const From *s = static_cast<const From *>(src);
  To *d = static_cast<To *>(dst);
  for (int64_t i = 0; i < n; ++i)
    d[i] = ConvertOne<From, To>(s[i]);
}

template <typename From> bool CastFrom(const void *src, ElemType to, void *dst, int64_t n) {
  switch (to) {
  case ElemType::kF32:
    ConvertAll<From, float>(src, dst, n);
    return true;
  case ElemType::kF16:
    ConvertAll<From, Half>(src, dst, n);
    return true;
  case ElemType::kBF16:
    ConvertAll<From, BF16>(src, dst, n);
    return true;
  case ElemType::kF64:
    ConvertAll<From, double>(src, dst, n);
    return true;
  case ElemType::kI8:
    ConvertAll<From, int8_t>(src, dst, n);
    return true;
  case ElemType::kU8:
    ConvertAll<From, uint8_t>(src, dst, n);
    return true;
  case ElemType::kI32:
    ConvertAll<From, int32_t>(src, dst, n);
    return true;
  case ElemType::kI64:
    ConvertAll<From, int64_t>(src, dst, n);
    return true;
  case ElemType::kBool:
    ConvertAll<From, Bool>(src, dst, n);
    return true;
  }
  return false;
}

} // namespace

bool CastElements(ElemType from, const void *src, ElemType to, void *dst, int64_t n) {
  switch (from) {
  case ElemType::kF32:
    return CastFrom<float>(src, to, dst, n);
  case ElemType::kF16:
    return CastFrom<Half>(src, to, dst, n);
  case ElemType::kBF16:
    return CastFrom<BF16>(src, to, dst, n);
  case ElemType::kF64:
    return CastFrom<double>(src, to, dst, n);
  case ElemType::kI8:
    return CastFrom<int8_t>(src, to, dst, n);
  case ElemType::kU8:
    return CastFrom<uint8_t>(src, to, dst, n);
  case ElemType::kI32:
    return CastFrom<int32_t>(src, to, dst, n);
  case ElemType::kI64:
    return CastFrom<int64_t>(src, to, dst, n);
  case ElemType::kBool:
    return CastFrom<Bool>(src, to, dst, n);
  }
  return false;
}

void DequantizeColumns(const int8_t *q, const float *scale, int64_t rows, int64_t cols,
                       float *out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      out[r * cols + j] = static_cast<float>(q[r * cols + j]) * scale[j];
}

} // namespace kiln::kernels
