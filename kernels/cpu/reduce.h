// Reductions (sum, mean, max, min) over any set of dims of a contiguous
// tensor.
#pragma once

#include "kernels/op_kinds.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::kernels {

// y = op over the dims d of `shape` with reduce[d] set; y's layout is `shape`
// with those dims removed (keepdims only changes the shape, not the bytes).
// Reducing over an empty dim gives the identity: 0 for sum, NaN for a float
// mean (0 for an integer one), the lowest value for max and the highest for
// min. Max and Min propagate NaN. T is float, double, int8_t, uint8_t,
// int32_t or int64_t; integer sums wrap and integer means truncate.
template <typename T>
void Reduce(ReduceOp op, const T *x, const std::vector<int64_t> &shape,
            const std::vector<bool> &reduce, T *y);

// CumSum of x viewed as [outer, len, inner] along the middle axis (y may
// not be x); T as Reduce's.
template <typename T>
void CumSum(const T *x, T *y, int64_t outer, int64_t len, int64_t inner, bool exclusive,
            bool reverse);

} // namespace kiln::kernels
