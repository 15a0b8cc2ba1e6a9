#include "kernels/cpu/reduce_softmax.h"

#include "kernels/cpu/fast_math.h"

#include <cmath>
#include <type_traits>
#include <vector>

namespace kiln::kernels {
namespace {

// y[i] = exp(y[i]); float takes the vectorized exp.
template <typename T> void ExpInPlace(T *y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    ExpF32(y, y, n);
  } else {
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::exp(y[i]);
  }
}

// Sum with several accumulators so the float loop vectorizes without
// reassociating one chain.
template <typename T> T Sum(const T *x, int64_t n) {
  constexpr int kLanes = 8;
  T acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      acc[l] += x[i + l];
  T total = 0;
  for (int l = 0; l < kLanes; ++l)
    total += acc[l];
  for (; i < n; ++i)
    total += x[i];
  return total;
}

// One contiguous row: the common case (softmax over the last axis). Each
// step is a plain map or sum so that it vectorizes. `scratch` holds the
// exponentials for log-softmax, whose result needs x again (y may be x).
template <typename T>
void SoftmaxRow(const T *x, T *y, int64_t n, bool log, std::vector<T> &scratch) {
  T max = x[0];
  for (int64_t i = 1; i < n; ++i)
    max = x[i] > max ? x[i] : max;
  T *e = y;
  if (log) {
    scratch.resize(static_cast<size_t>(n));
    e = scratch.data();
  }
  for (int64_t i = 0; i < n; ++i)
    e[i] = x[i] - max;
  ExpInPlace(e, n);
  const T sum = Sum(e, n);
  if (log) {
    const T shift = max + std::log(sum);
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] - shift;
  } else {
    const T scale = T(1) / sum;
    for (int64_t i = 0; i < n; ++i)
      y[i] *= scale;
  }
}

// Softmax over a non-last axis: walk the axis as rows of `inner` contiguous
// elements so every loop stays unit-stride.
template <typename T>
void SoftmaxStrided(const T *x, T *y, int64_t axis, int64_t inner, bool log, std::vector<T> &max,
                    std::vector<T> &sum, std::vector<T> &scratch) {
  max.assign(x, x + inner);
  for (int64_t a = 1; a < axis; ++a) {
    const T *row = x + a * inner;
    for (int64_t i = 0; i < inner; ++i)
      max[i] = row[i] > max[i] ? row[i] : max[i];
  }
  sum.assign(static_cast<size_t>(inner), T(0));
  scratch.resize(static_cast<size_t>(inner));
  for (int64_t a = 0; a < axis; ++a) {
    const T *row = x + a * inner;
    // Plain softmax keeps the exponentials in y; log-softmax still needs x.
    T *e = log ? scratch.data() : y + a * inner;
    for (int64_t i = 0; i < inner; ++i)
      e[i] = row[i] - max[i];
    ExpInPlace(e, inner);
    for (int64_t i = 0; i < inner; ++i)
      sum[i] += e[i];
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
  std::vector<T> max, sum, scratch;
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o)
      SoftmaxRow(x + o * axis, y + o * axis, axis, log, scratch);
    return;
  }
  for (int64_t o = 0; o < outer; ++o)
    SoftmaxStrided(x + o * axis * inner, y + o * axis * inner, axis, inner, log, max, sum, scratch);
}

template void Softmax<float>(const float *, float *, int64_t, int64_t, int64_t, bool);
template void Softmax<double>(const double *, double *, int64_t, int64_t, int64_t, bool);

} // namespace kiln::kernels
