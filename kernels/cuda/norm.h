// CUDA kernels of the row normalizations: layer_normalization, rms_norm, and
// the residual add fused with RMS or layer norm (docs/fused-ops.md). One
// thread block per row; sums in f32 (f64 for f64 data), two passes for the
// layer norm's variance; half results are rounded once to nearest even.
#pragma once

#include "kernels/cuda/fused_float.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

constexpr int kMaxNormParamRank = 8;

// A scale or bias operand. Its type may differ from x's. With rank 0 it is
// contiguous over the row (element c of a row is element c of the
// parameter); otherwise element c is found by unravelling c over `dims` (the
// normalized shape, row-major) and applying `strides` (0 where the
// parameter broadcasts).
struct NormParam {
  const void *data = nullptr; // null: absent (an omitted bias)
  FusedFloat type = FusedFloat::kF32;
  int rank = 0;
  int64_t dims[kMaxNormParamRank] = {};
  int64_t strides[kMaxNormParamRank] = {};
};

// The rows of x as [rows, cols] (contiguous).
struct NormShape {
  int64_t rows = 0, cols = 0;
  // RMS norms only: rows that fit go through the kernel that holds a row in
  // registers (one read, one write) where the operands allow 16-byte
  // vectors.
  bool rows_in_registers = false;
};

// y = (x - mean) / sqrt(var + epsilon) * scale + bias per row (population
// variance). `mean` and `inv_std` (f32, one per row) may be null. x and y
// have `type` (f32, f16, bf16 or f64).
cudaError_t LayerNorm(FusedFloat type, const void *x, const NormParam &scale, const NormParam &bias,
                      void *y, float *mean, float *inv_std, NormShape shape, float epsilon,
                      cudaStream_t stream);

// y = x / sqrt(mean(x^2) + epsilon) * scale per row.
cudaError_t RmsNorm(FusedFloat type, const void *x, const NormParam &scale, void *y,
                    NormShape shape, float epsilon, cudaStream_t stream);

// sum = a + b (rounded into `type`), y = RmsNorm of the unrounded sum.
cudaError_t AddRmsNorm(FusedFloat type, const void *a, const void *b, const NormParam &scale,
                       void *sum, void *y, NormShape shape, float epsilon, cudaStream_t stream);

// sum = a + b (rounded into `type`), y = LayerNorm of the unrounded sum;
// bias.data may be null.
cudaError_t AddLayerNorm(FusedFloat type, const void *a, const void *b, const NormParam &scale,
                         const NormParam &bias, void *sum, void *y, NormShape shape, float epsilon,
                         cudaStream_t stream);

} // namespace kiln::kernels::cuda
