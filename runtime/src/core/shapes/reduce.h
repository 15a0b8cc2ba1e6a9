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

// Softmax and LogSoftmax (opset 13) over `axis` of a contiguous `shape`:
// `outer` rows before the axis, `len` along it, `inner` after it. A scalar
// is one row of one element.
struct SoftmaxDims {
  int64_t outer = 1, len = 1, inner = 1;
};
StatusOr<SoftmaxDims> SoftmaxDimsOf(const char *op, const OpAttrs &attrs, const Shape &shape);

// CumSum over the axis its operand in[1] names (a scalar or one element,
// i32 or i64, negative from the back), as [outer, len, inner] of in[0]'s
// shape. InvalidArgument when the axis is out of range or cannot be read
// on the host.
StatusOr<SoftmaxDims> CumSumDimsOf(const Inputs &in);

// The name of Softmax (kLog false) or LogSoftmax (true) in plans.
template <bool kLog> constexpr const char *kSoftmaxName = kLog ? "log_softmax" : "softmax";

} // namespace kiln
