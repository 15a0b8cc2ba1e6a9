// Tensor generators: constant fill (ConstantOfShape) and arithmetic
// sequences (Range).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::kernels {

// Writes n copies of the `elem_size`-byte pattern at `value`.
void FillBytes(size_t elem_size, const void *value, void *dst, int64_t n);

// out[i] = start + i * delta. T is float, double, int32_t or int64_t; integer
// arithmetic wraps.
template <typename T> void Range(T start, T delta, T *out, int64_t n);

} // namespace kiln::kernels
