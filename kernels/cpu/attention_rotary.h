// Rotary position embedding (RoPE) applied to the last dim of a contiguous
// tensor, in f32, with cos/sin tables that broadcast over the leading dims.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::kernels {

// One cos or sin table: a row of `rotary_dim` contiguous values per
// position, found through one element stride per leading dim of x (0 where
// the table has extent 1 and broadcasts).
struct RotaryTable {
  const float *data;
  std::vector<int64_t> strides; // one per entry of RotaryShape::lead
};

struct RotaryShape {
  std::vector<int64_t> lead; // x's dims except the last
  int64_t dim = 0;           // D, x's last dim
  int64_t rotary_dim = 0;    // R: even, <= D
  bool interleaved = false;  // GPT-J pairs (2i, 2i+1) instead of halves
};

// y[..., :R] = x[..., :R] * cos + rot(x[..., :R]) * sin, y[..., R:] =
// x[..., R:], with rot the rotate-half or interleaved pairing
// (docs/fused-ops.md). y must not overlap x.
void Rotary(const float *x, const RotaryTable &cos, const RotaryTable &sin, float *y,
            const RotaryShape &shape);

} // namespace kiln::kernels
