// Layer normalization over the trailing `cols` elements of each row.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::kernels {

// y[r, c] = (x[r, c] - mean_r) / sqrt(var_r + epsilon) * scale[c] + bias[c]
// with the population variance. `bias`, `mean_out` and `inv_std_out` may be
// null; the latter two receive one value per row. T is float or double.
template <typename T>
void LayerNorm(const T *x, const T *scale, const T *bias, T *y, int64_t rows, int64_t cols,
               float epsilon, float *mean_out, float *inv_std_out);

} // namespace kiln::kernels
