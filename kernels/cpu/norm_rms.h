// Fused normalizations of transformer blocks over the last dim of a
// contiguous [rows, cols] tensor, in f32: RMS norm, and residual add fused
// with RMS norm or layer norm. Outputs must not overlap the inputs.
#pragma once

#include <cstdint>

namespace kiln::kernels {

// y = x / sqrt(mean(x^2) + epsilon) * scale per row; one pass for the sum of
// squares, one for the scaling, so a row is read from cache the second time.
void RmsNorm(const float *x, const float *scale, float *y, int64_t rows, int64_t cols,
             float epsilon);

// sum = a + b, y = RmsNorm(sum); the residual stream is kept (sum) because
// the next block adds onto it.
void AddRmsNorm(const float *a, const float *b, const float *scale, float *sum, float *y,
                int64_t rows, int64_t cols, float epsilon);

// sum = a + b, y = LayerNorm(sum) (population variance; `bias` may be null),
// row by row so the sum is still in cache when it is normalized.
void AddLayerNorm(const float *a, const float *b, const float *scale, const float *bias, float *sum,
                  float *y, int64_t rows, int64_t cols, float epsilon);

} // namespace kiln::kernels
