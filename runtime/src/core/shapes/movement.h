// Transpose's permutation and Slice's view of its operand, shared by their
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

} // namespace kiln
