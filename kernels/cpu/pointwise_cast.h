// Element type conversion (ONNX Cast) among the tensor types kiln carries,
// including IEEE half and bfloat16 bit patterns.
#pragma once

#include "kernels/op_kinds.h"

#include <cstddef>
#include <cstdint>

namespace kiln::kernels {

// Round-to-nearest-even conversions; NaN stays NaN, overflow becomes inf.
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);
float BFloat16ToFloat(uint16_t b);

// Converts n elements. Float to integer truncates toward zero, saturates at
// the integer range and maps NaN to 0; anything to bool is "!= 0" (NaN is
// true); bool to anything is 0 or 1. Returns false for an unknown kind.
bool CastElements(ElemType from, const void *src, ElemType to, void *dst, int64_t n);

// out[r, j] = q[r, j] * scale[j] for a row-major int8 [rows, cols] with one
// scale per column (an int8 weight of the quantize phase, widened).
void DequantizeColumns(const int8_t *q, const float *scale, int64_t rows, int64_t cols, float *out);

} // namespace kiln::kernels
