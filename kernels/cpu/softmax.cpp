#include "cpu/softmax.h"

#include <cmath>
#include <vector>

namespace kiln::kernels {
namespace {

// One contiguous row: the common case (softmax over the last axis).
template <typename T> void SoftmaxRow(const T *x, T *y, int64_t n, bool log) {
  T max = x[0];
  for (int64_t i = 1; i < n; ++i)
    max = x[i] > max ? x[i] : max;
  T sum = 0;
  if (log) {
    for (int64_t i = 0; i < n; ++i)
      sum += std::exp(x[i] - max);
    const T shift = max + std::log(sum);
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] - shift;
  } else {
    for (int64_t i = 0; i < n; ++i) {
      y[i] = std::exp(x[i] - max);
      sum += y[i];
    }
    const T scale = T(1) / sum;
    for (int64_t i = 0; i < n; ++i)
      y[i] *= scale;
  }
}

// Softmax over a non-last axis: walk the axis as rows of `inner` contiguous
// elements so every loop stays unit-stride.
template <typename T>
void SoftmaxStrided(const T *x, T *y, int64_t axis, int64_t inner, bool log, std::vector<T> &max,
                    std::vector<T> &sum) {
  max.assign(x, x + inner);
  for (int64_t a = 1; a < axis; ++a) {
    const T *row = x + a * inner;
    for (int64_t i = 0; i < inner; ++i)
      max[i] = row[i] > max[i] ? row[i] : max[i];
  }
  sum.assign(inner, T(0));
  for (int64_t a = 0; a < axis; ++a) {
    const T *row = x + a * inner;
    T *out = y + a * inner;
    for (int64_t i = 0; i < inner; ++i) {
      const T e = std::exp(row[i] - max[i]);
      sum[i] += e;
      if (!log)
        out[i] = e;
    }
  }
  if (log) {
    for (int64_t i = 0; i < inner; ++i)
      sum[i] = max[i] + std::log(sum[i]);
    for (int64_t a = 0; a < axis; ++a)
      for (int64_t i = 0; i < inner; ++i)
        y[a * inner + i] = x[a * inner + i] - sum[i];
  } else {
    for (int64_t i = 0; i < inner; ++i)
      sum[i] = T(1) / sum[i];
    for (int64_t a = 0; a < axis; ++a)
      for (int64_t i = 0; i < inner; ++i)
        y[a * inner + i] *= sum[i];
  }
}

} // namespace

template <typename T>
void Softmax(const T *x, T *y, int64_t outer, int64_t axis, int64_t inner, bool log) {
  if (axis == 0 || inner == 0)
    return;
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o)
      SoftmaxRow(x + o * axis, y + o * axis, axis, log);
    return;
  }
  std::vector<T> max, sum;
  for (int64_t o = 0; o < outer; ++o)
    SoftmaxStrided(x + o * axis * inner, y + o * axis * inner, axis, inner, log, max, sum);
}

template void Softmax<float>(const float *, float *, int64_t, int64_t, int64_t, bool);
template void Softmax<double>(const double *, double *, int64_t, int64_t, int64_t, bool);

} // namespace kiln::kernels
