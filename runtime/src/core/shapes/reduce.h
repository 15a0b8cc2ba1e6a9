// Which dims a reduction reduces, shared by the reductions' shape rules
// (core/shapes/reduce.cpp) and every backend's kernels.
#pragma once

#include "core/kernel.h"

#include <vector>

namespace kiln {

// One flag per dim of `data` (in[0]): true where it is reduced. The axes
// come from the operand in[1] (opset 18 form) or, for robustness, an `axes`
// attribute. Empty axes mean all dims unless noop_with_empty_axes is set, in
// which case nothing is reduced.
StatusOr<std::vector<bool>> ReducedDims(const char *op, const OpAttrs &attrs, const Inputs &in);

} // namespace kiln
