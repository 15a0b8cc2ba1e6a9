// GatherND and ScatterND: index tuples that address the leading dims of a
// tensor and pick or write the slices behind them. The tensors are viewed as
//   data    [batch, dims[0], ..., dims[k-1], inner]
//   indices [batch, n, k]
//   slices  [batch, n, inner]   (GatherND's output, ScatterND's updates)
// Every function checks all indices before it writes anything and returns
// the position (in index elements) of the first one outside [-dim, dim), or
// -1 when all are valid. Negative indices count from the end of their dim.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::kernels {

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

// Checks `count` tuples of dims.size() indices without touching any tensor.
int64_t FirstBadIndex(const std::vector<int64_t> &dims, const int64_t *idx, int64_t count);

// out[b, j, :] = data[b, idx[b, j, 0], ..., idx[b, j, k-1], :], bytes only.
int64_t GatherND(size_t elem_size, const void *data, int64_t batch,
                 const std::vector<int64_t> &dims, int64_t inner, const int64_t *idx, int64_t n,
                 void *out);

// out (which already holds data, with batch 1) gets each slice of updates at
// its tuple, in order: replaced (kNone) or combined with the element there.
// T is float, double, int8_t, uint8_t, int32_t or int64_t; integer add and
// mul wrap, float max/min propagate NaN. Updates and out must not overlap.
template <typename T>
int64_t ScatterND(T *out, const std::vector<int64_t> &dims, int64_t inner, const int64_t *idx,
                  int64_t n, const T *updates, ScatterReduction reduction);

// ScatterND with kNone for any element type, bytes only.
int64_t ScatterNDBytes(size_t elem_size, void *out, const std::vector<int64_t> &dims, int64_t inner,
                       const int64_t *idx, int64_t n, const void *updates);

} // namespace kiln::kernels
