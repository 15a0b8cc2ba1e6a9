// Transpose's permutation, Slice's and Tile's views of their operand and
// Concat's and Split's rows, shared by their
// shape rules (core/shapes/movement.cpp) and every backend's kernels.
#pragma once

#include "core/kernel.h"

#include <cstdint>
#include <vector>

namespace kiln {

// The `perm` attribute checked against `rank`; reversed dims when absent.
StatusOr<std::vector<int64_t>> TransposePermutation(const OpAttrs &attrs, int64_t rank);

// A Slice result as a strided view of its data operand.
struct SliceView {
  Shape shape;                  // result shape
  int64_t offset = 0;           // first element, in elements
  std::vector<int64_t> strides; // per result dim, in elements
};
// From in = {data, starts, ends, axes?, steps?}, whose index operands' values
// must be known.
StatusOr<SliceView> ResolveSlice(const Inputs &in);

// Tile as a strided view of its operand `in` (offset 0): dims [r0, d0, r1,
// d1, ...] of `out`'s repeats r and `in`'s dims d, the repeats of stride 0.
SliceView TileView(const Shape &in, const Shape &out);

// Concat and Split along `axis`: the bytes of one outer row of `shape` from
// `axis` on, and the number of rows (the product of the dims before it).
int64_t RowBytesFrom(const Shape &shape, int64_t axis, DType t);
int64_t RowsBefore(const Shape &shape, int64_t axis);

} // namespace kiln
