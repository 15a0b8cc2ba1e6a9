#include "kernels/cpu/norm_layer.h"

#include <cmath>

namespace kiln::kernels {
namespace {

// Several accumulators so the float sums vectorize without reassociation.
template <typename T, typename F> T SumOf(int64_t n, F term) {
  constexpr int kLanes = 8;
  T acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      acc[l] += term(i + l);
  T total = 0;
  for (int l = 0; l < kLanes; ++l)
    total += acc[l];
  for (; i < n; ++i)
    total += term(i);
  return total;
}

} // namespace

template <typename T>
void LayerNorm(const T *x, const T *scale, const T *bias, T *y, int64_t rows, int64_t cols,
               float epsilon, float *mean_out, float *inv_std_out) {
  if (cols == 0)
    return;
  const T inv_cols = T(1) / static_cast<T>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * cols;
    T *yr = y + r * cols;
    // Two passes (mean, then squared deviations) avoid the cancellation of
    // E[x^2] - E[x]^2 on rows with a large mean.
    const T mean = SumOf<T>(cols, [xr](int64_t i) { return xr[i]; }) * inv_cols;
    const T var = SumOf<T>(cols,
                           [xr, mean](int64_t i) {
                             const T d = xr[i] - mean;
                             return d * d;
                           }) *
                  inv_cols;
    const T inv_std = T(1) / std::sqrt(var + static_cast<T>(epsilon));
    if (bias != nullptr) {
      for (int64_t i = 0; i < cols; ++i)
        yr[i] = (xr[i] - mean) * inv_std * scale[i] + bias[i];
    } else {
      for (int64_t i = 0; i < cols; ++i)
        yr[i] = (xr[i] - mean) * inv_std * scale[i];
    }
    if (mean_out != nullptr)
      mean_out[r] = static_cast<float>(mean);
    if (inv_std_out != nullptr)
      inv_std_out[r] = static_cast<float>(inv_std);
  }
}

template void LayerNorm<float>(const float *, const float *, const float *, float *, int64_t,
                               int64_t, float, float *, float *);
template void LayerNorm<double>(const double *, const double *, const double *, double *, int64_t,
                                int64_t, float, float *, float *);

} // namespace kiln::kernels
