//===- HalfFloat.cpp - f32 to f16/bf16 rounding for weights ---------------===//

#include "passes/HalfFloat.h"

#include <cstring>
#include <limits>

namespace kiln {
namespace {

uint32_t bitsOf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

/// Shifts `mantissa` right by `shift` (1..31), rounding to nearest even.
uint32_t shiftRoundEven(uint32_t mantissa, int shift) {
  uint32_t kept = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (kept & 1)))
    ++kept; // a carry out of the mantissa is the next exponent, as it should be
  return kept;
}

} // namespace

uint16_t floatToHalfBits(float f) {
  const uint32_t x = bitsOf(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t exponent = (x >> 23) & 0xff;
  const uint32_t mantissa = x & 0x7fffff;
  if (exponent == 0xff) {
    if (mantissa == 0)
      return sign | 0x7c00;
    // Keep the payload's top bits; a payload that shifts out entirely would
    // read as inf, so such a NaN keeps one bit.
    uint16_t payload = static_cast<uint16_t>(mantissa >> 13);
    return sign | 0x7c00 | (payload ? payload : 1);
  }
  // The exponent rebiased for binary16 (bias 15 instead of 127).
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31)
    return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal in binary16 (f32 subnormals are far below its range). Below
    // half the smallest subnormal (2^-25) everything rounds to zero.
    if (e < -10)
      return sign;
    return sign | static_cast<uint16_t>(shiftRoundEven(mantissa | 0x800000, 14 - e));
  }
  // Rounding up past the largest finite value carries into the inf pattern.
  return sign |
         static_cast<uint16_t>(shiftRoundEven((static_cast<uint32_t>(e) << 23) | mantissa, 13));
}

uint16_t floatToBFloat16Bits(float f) {
  const uint32_t x = bitsOf(f);
  if ((x & 0x7fffffff) > 0x7f800000) {
    // NaN: truncation could clear every payload bit left, which is inf.
    uint16_t top = static_cast<uint16_t>(x >> 16);
    return (top & 0x7f) ? top : static_cast<uint16_t>(top | 0x40);
  }
  // Rounding the top half of the pattern carries into the exponent, so
  // overflow lands on inf by itself.
  return static_cast<uint16_t>(shiftRoundEven(x, 16));
}

void convertFloats(const float *src, uint16_t *dst, int64_t n, bool bfloat16) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = bfloat16 ? floatToBFloat16Bits(src[i]) : floatToHalfBits(src[i]);
}

float halfMax(bool bfloat16) {
  const uint32_t bits = bfloat16 ? 0x7f7f0000u : 0x477fe000u; // 65504 = 0x477fe000 in f32
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float saturateToHalf(float f, bool bfloat16) {
  const float max = halfMax(bfloat16);
  if (f > max && f <= std::numeric_limits<float>::max())
    return max;
  if (f < -max && f >= -std::numeric_limits<float>::max())
    return -max;
  return f; // in range, inf or NaN (every comparison with NaN is false)
}

} // namespace kiln
