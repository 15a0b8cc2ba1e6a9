// CumSum's running sum over one line of a tensor, shared by both kernel
// trees (the CPU loops over lines, the CUDA kernel gives each line a
// thread): integer sums wrap (wrap_arith.h), floats add in order.
#pragma once

#include "kernels/host_device.h"
#include "kernels/wrap_arith.h"

#include <cstdint>

namespace kiln::kernels {

// y[i * stride] = sum of x[j * stride] over j <= i (j < i when exclusive),
// for i in [0, len); with reverse, over j >= i (j > i) instead.
template <typename T>
KILN_HD void CumSumLine(const T *x, T *y, int64_t len, int64_t stride, bool exclusive,
                        bool reverse) {
  T sum = T(0);
  for (int64_t n = 0; n < len; ++n) {
    const int64_t i = (reverse ? len - 1 - n : n) * stride;
    const T v = x[i];
    if (exclusive) {
      y[i] = sum;
      sum = WrapAdd(sum, v);
    } else {
      sum = WrapAdd(sum, v);
      y[i] = sum;
    }
  }
}

} // namespace kiln::kernels
