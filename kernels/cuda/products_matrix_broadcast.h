// Broadcast of a matrix operand into a full [m, n] result, scaled: ONNX
// Gemm's C, which the GEMM then accumulates onto (beta), and beta * C alone
// when the product is empty (K = 0).
#pragma once

#include "kernels/cuda/float_elem.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// d[i, j] = scale * c[i * row_stride + j * col_stride] for i < m, j < n; a
// zero stride broadcasts that dim. c and d have type `t`; the product is
// computed in f32 (f64 for f64) and rounded once, so scale 1 copies exactly.
// d is row-major [m, n], contiguous. Returns the launch's error.
cudaError_t BroadcastMatrix(FloatElem t, const void *c, int64_t row_stride, int64_t col_stride,
                            double scale, void *d, int64_t m, int64_t n, cudaStream_t stream);

} // namespace kiln::kernels::cuda
