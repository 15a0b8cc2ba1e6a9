#include "kernels/cpu/norm_rms.h"

#include "kernels/cpu/norm_layer.h"

#include <cmath>

namespace kiln::kernels {
namespace {

constexpr int kLanes = 8;

// Sum of squares with several accumulators: the loop vectorizes without
// reassociation, and splitting the sum keeps its rounding error small.
float SumSquares(const float *x, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      acc[l] += x[i + l] * x[i + l];
  float total = 0;
  for (int l = 0; l < kLanes; ++l)
    total += acc[l];
  for (; i < n; ++i)
    total += x[i] * x[i];
  return total;
}

// s = a + b, returning the sum of squares of s, in one pass.
float AddAndSumSquares(const float *a, const float *b, float *s, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float v = a[i + l] + b[i + l];
      s[i + l] = v;
      acc[l] += v * v;
    }
  float total = 0;
  for (int l = 0; l < kLanes; ++l)
    total += acc[l];
  for (; i < n; ++i) {
    const float v = a[i] + b[i];
    s[i] = v;
    total += v * v;
  }
  return total;
}

// y = x * inv_rms * scale, the second pass of every RMS norm row.
void ScaleRow(const float *x, const float *scale, float inv_rms, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * inv_rms * scale[i];
}

} // namespace

void RmsNorm(const float *x, const float *scale, float *y, int64_t rows, int64_t cols,
             float epsilon) {
  if (cols == 0)
    return;
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    const float inv_rms = 1.0f / std::sqrt(SumSquares(xr, cols) * inv_cols + epsilon);
    ScaleRow(xr, scale, inv_rms, y + r * cols, cols);
  }
}

void AddRmsNorm(const float *a, const float *b, const float *scale, float *sum, float *y,
                int64_t rows, int64_t cols, float epsilon) {
  if (cols == 0)
    return;
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    float *sr = sum + r * cols;
    const float ss = AddAndSumSquares(a + r * cols, b + r * cols, sr, cols);
    const float inv_rms = 1.0f / std::sqrt(ss * inv_cols + epsilon);
    ScaleRow(sr, scale, inv_rms, y + r * cols, cols);
  }
}

void AddLayerNorm(const float *a, const float *b, const float *scale, const float *bias, float *sum,
                  float *y, int64_t rows, int64_t cols, float epsilon) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *ar = a + r * cols, *br = b + r * cols;
    float *sr = sum + r * cols;
    for (int64_t i = 0; i < cols; ++i)
      sr[i] = ar[i] + br[i];
    LayerNorm<float>(sr, scale, bias, y + r * cols, 1, cols, epsilon, nullptr, nullptr);
  }
}

} // namespace kiln::kernels
