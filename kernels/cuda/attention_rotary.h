// CUDA kernel of rotary position embedding (docs/fused-ops.md, rotary):
// full or partial (rotary_dim R <= D, the rest passed through), rotate-half
// or interleaved pairs, with cos/sin tables that broadcast over x's leading
// dims and are read in place.
#pragma once

#include "kernels/cuda/fused_float.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

constexpr int kMaxRotaryLeadRank = 8;

// x as [lead..., D] (contiguous) and the rotation.
struct RotaryLayout {
  int lead_rank = 0; // <= kMaxRotaryLeadRank; merge dims before (the wrapper does)
  int64_t lead[kMaxRotaryLeadRank] = {};
  int64_t dim = 0;        // D
  int64_t rotary_dim = 0; // R: even, <= D
  bool interleaved = false;
};

// A cos or sin table: rows of R contiguous values, row of x's leading index
// (i0, i1, ...) at sum_k i_k * strides[k] (0 where it broadcasts).
struct RotaryTable {
  const void *data = nullptr;
  FusedFloat type = FusedFloat::kF32;
  int64_t strides[kMaxRotaryLeadRank] = {};
};

// y[..., :R] = x[..., :R] * cos + rot(x[..., :R]) * sin, y[..., R:] =
// x[..., R:]; computed in f32, rounded once into `type` (f32, f16, bf16).
cudaError_t Rotary(FusedFloat type, const void *x, const RotaryTable &cos, const RotaryTable &sin,
                   void *y, const RotaryLayout &layout, cudaStream_t stream);

} // namespace kiln::kernels::cuda
