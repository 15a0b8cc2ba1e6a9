// Data movement kernels that only move bytes, so they work for every element
// type: strided copy (the engine behind Transpose, Slice, Expand and Tile),
// Concat, Split, Gather and Trilu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::kernels {

// dst, contiguous with `shape`, receives for each index (i_0..i_r) the element
// at src + sum(i_d * src_strides[d]). Strides count elements and may be zero
// (broadcast) or negative (reversed slice). Adjacent dims that are contiguous
// in src are merged, and unit-stride runs are memcpy'd.
void StridedCopy(size_t elem_size, const void *src, const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &src_strides, void *dst);

// Concatenates along one axis: every input is viewed as [outer, row_bytes[i]]
// and dst as [outer, sum(row_bytes)].
void Concat(const std::vector<const void *> &srcs, const std::vector<int64_t> &row_bytes,
            int64_t outer, void *dst);

// The inverse of Concat: src is [outer, sum(row_bytes)], dsts[i] is
// [outer, row_bytes[i]].
void Split(const void *src, int64_t outer, const std::vector<int64_t> &row_bytes,
           const std::vector<void *> &dsts);

// out[o, j, :] = data[o, idx[j], :] with rows of `inner` elements; negative
// indices count from the end of the axis. Checks every index before writing
// anything and returns the position of the first one outside
// [-axis_dim, axis_dim), or -1 when all are valid. Index is int32_t or int64_t.
template <typename Index>
int64_t Gather(size_t elem_size, const void *data, int64_t outer, int64_t axis_dim, int64_t inner,
               const Index *idx, int64_t num_idx, void *out);

// Keeps the upper (j >= i + k) or lower (j <= i + k) triangle of each of
// `batch` [rows, cols] matrices and zeroes the rest.
void Trilu(size_t elem_size, const void *src, void *dst, int64_t batch, int64_t rows, int64_t cols,
           int64_t k, bool upper);

} // namespace kiln::kernels
