#include "kernels/cpu/reduce.h"

#include "kernels/reduce_cumsum.h"
#include "kernels/wrap_arith.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace kiln::kernels {
namespace {

template <typename T> bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}
template <typename T> T Max(T m, T v) { return (v > m || IsNan(v)) ? v : m; }
template <typename T> T Min(T m, T v) { return (v < m || IsNan(v)) ? v : m; }

template <typename T> T Identity(ReduceOp op) {
  switch (op) {
  case ReduceOp::kMax:
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  case ReduceOp::kMin:
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::max();
  default:
    return T(0);
  }
}

// Sum of a contiguous run with several independent accumulators, which lets
// the compiler vectorize without reassociating a single float chain.
template <typename T> T SumRun(const T *x, int64_t n) {
  constexpr int kLanes = 8;
  T acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      acc[l] = WrapAdd(acc[l], x[i + l]);
  T total = 0;
  for (int l = 0; l < kLanes; ++l)
    total = WrapAdd(total, acc[l]);
  for (; i < n; ++i)
    total = WrapAdd(total, x[i]);
  return total;
}

// One reduced group: x viewed as [outer, r, inner] -> y as [outer, inner].
// Mean is reduced as a sum here; the caller divides once at the end.
template <typename T>
void ReduceAxis(ReduceOp op, const T *x, int64_t outer, int64_t r, int64_t inner, T *y) {
  const bool is_sum = op == ReduceOp::kSum || op == ReduceOp::kMean;
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      const T *row = x + o * r;
      if (is_sum) {
        y[o] = SumRun(row, r);
      } else {
        T m = row[0];
        if (op == ReduceOp::kMax) {
          for (int64_t i = 1; i < r; ++i)
            m = Max(m, row[i]);
        } else {
          for (int64_t i = 1; i < r; ++i)
            m = Min(m, row[i]);
        }
        y[o] = m;
      }
    }
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    const T *src = x + o * r * inner;
    T *dst = y + o * inner;
    std::memcpy(dst, src, static_cast<size_t>(inner) * sizeof(T));
    for (int64_t a = 1; a < r; ++a) {
      const T *row = src + a * inner;
      if (is_sum) {
        for (int64_t i = 0; i < inner; ++i)
          dst[i] = WrapAdd(dst[i], row[i]);
      } else if (op == ReduceOp::kMax) {
        for (int64_t i = 0; i < inner; ++i)
          dst[i] = Max(dst[i], row[i]);
      } else {
        for (int64_t i = 0; i < inner; ++i)
          dst[i] = Min(dst[i], row[i]);
      }
    }
  }
}

} // namespace

template <typename T>
void Reduce(ReduceOp op, const T *x, const std::vector<int64_t> &shape,
            const std::vector<bool> &reduce, T *y) {
  int64_t in_count = 1, out_count = 1, reduced_count = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    in_count *= shape[d];
    if (reduce[d]) {
      reduced_count *= shape[d];
    } else {
      out_count *= shape[d];
    }
  }
  if (out_count == 0)
    return;
  if (in_count == 0) {
    // Only reduced dims can be empty here.
    T fill = Identity<T>(op);
    if (op == ReduceOp::kMean && std::is_floating_point_v<T>)
      fill = std::numeric_limits<T>::quiet_NaN();
    for (int64_t i = 0; i < out_count; ++i)
      y[i] = fill;
    return;
  }

  // Collapse to alternating kept/reduced groups, dropping unit dims.
  std::vector<int64_t> sizes;
  std::vector<bool> reduced;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (!reduced.empty() && reduced.back() == reduce[d]) {
      sizes.back() *= shape[d];
    } else {
      sizes.push_back(shape[d]);
      reduced.push_back(reduce[d]);
    }
  }

  // Reduce the innermost reduced group first, ping-ponging through scratch
  // buffers, the last step writing straight into y.
  int last_group = -1;
  for (int g = 0; g < static_cast<int>(sizes.size()); ++g)
    if (reduced[g])
      last_group = g;
  if (last_group < 0) {
    std::memmove(y, x, static_cast<size_t>(out_count) * sizeof(T));
  } else {
    std::vector<T> scratch[2];
    int next_scratch = 0;
    const T *src = x;
    int first_group = last_group;
    for (int g = 0; g < last_group; ++g)
      if (reduced[g]) {
        first_group = g;
        break;
      }
    for (int g = last_group; g >= 0; --g) {
      if (!reduced[g])
        continue;
      int64_t outer = 1, inner = 1;
      for (int h = 0; h < g; ++h)
        outer *= sizes[h];
      for (int h = g + 1; h < static_cast<int>(sizes.size()); ++h)
        inner *= sizes[h];
      T *dst = y;
      if (g != first_group) {
        std::vector<T> &buf = scratch[next_scratch];
        next_scratch ^= 1;
        buf.resize(static_cast<size_t>(outer * inner));
        dst = buf.data();
      }
      ReduceAxis(op, src, outer, sizes[g], inner, dst);
      src = dst;
      sizes[g] = 1;
    }
  }
  if (op == ReduceOp::kMean) {
    if constexpr (std::is_floating_point_v<T>) {
      const T count = static_cast<T>(reduced_count);
      for (int64_t i = 0; i < out_count; ++i)
        y[i] /= count;
    } else {
      for (int64_t i = 0; i < out_count; ++i)
        y[i] = static_cast<T>(static_cast<int64_t>(y[i]) / reduced_count);
    }
  }
}

template <typename T>
void CumSum(const T *x, T *y, int64_t outer, int64_t len, int64_t inner, bool exclusive,
            bool reverse) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      CumSumLine(x + o * len * inner + i, y + o * len * inner + i, len, inner, exclusive, reverse);
}

#define KILN_INSTANTIATE_REDUCE(T)                                                                 \
  template void Reduce<T>(ReduceOp, const T *, const std::vector<int64_t> &,                       \
                          const std::vector<bool> &, T *);                                         \
  template void CumSum<T>(const T *, T *, int64_t, int64_t, int64_t, bool, bool);
KILN_INSTANTIATE_REDUCE(float)
KILN_INSTANTIATE_REDUCE(double)
KILN_INSTANTIATE_REDUCE(int8_t)
KILN_INSTANTIATE_REDUCE(uint8_t)
KILN_INSTANTIATE_REDUCE(int32_t)
KILN_INSTANTIATE_REDUCE(int64_t)
#undef KILN_INSTANTIATE_REDUCE

} // namespace kiln::kernels
