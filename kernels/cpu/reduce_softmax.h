// Softmax and LogSoftmax along one axis of a contiguous tensor viewed as
// [outer, axis, inner] (ONNX opset-13 semantics).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::kernels {

// y = softmax(x) (or log_softmax when `log`) along the middle dim; the max is
// subtracted first so large logits do not overflow. T is float or double.
template <typename T>
void Softmax(const T *x, T *y, int64_t outer, int64_t axis, int64_t inner, bool log);

} // namespace kiln::kernels
