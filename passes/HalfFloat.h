//===- HalfFloat.h - f32 to f16/bf16 rounding for weights -------*- C++ -*-===//
//
// The conversions kiln-convert-float-type applies to weights. Both round to
// nearest, ties to even, as IEEE 754 says for a narrowing conversion: a value
// past the largest finite half becomes inf of its sign, NaN stays NaN (its
// top payload bits kept, never turned into inf), and values below the
// smallest subnormal round to a signed zero. The pass saturates first
// (saturateToHalf), so that no finite constant becomes inf.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_HALFFLOAT_H
#define KILN_PASSES_HALFFLOAT_H

#include <cstdint>

namespace kiln {

/// The IEEE binary16 bit pattern nearest to `f`.
uint16_t floatToHalfBits(float f);

/// The bfloat16 bit pattern nearest to `f` (the top half of an f32, rounded).
uint16_t floatToBFloat16Bits(float f);

/// Converts `n` floats to 16-bit patterns of the given type.
void convertFloats(const float *src, uint16_t *dst, int64_t n, bool bfloat16);

/// The largest finite value of the half type: 65504 for binary16,
/// 0x7f7f0000 (about 3.3895e38) for bfloat16.
float halfMax(bool bfloat16);

/// `f` clamped to the half type's finite range (±halfMax), or `f` itself when
/// it is in range, infinite or NaN. A mask's fill finfo(float32).min, which
/// rounds to -inf in both types, becomes the half type's finfo.min: the value
/// a model exported in that type holds, so that `0 * min` stays 0, not NaN.
float saturateToHalf(float f, bool bfloat16);

} // namespace kiln

#endif // KILN_PASSES_HALFFLOAT_H
