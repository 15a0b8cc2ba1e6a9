// The dims of the fused attention ops, shared by their shape rules
// (core/shapes/attention.cpp) and every backend's kernels
// (docs/fused-ops.md).
#pragma once

#include "core/kernel.h"

#include <cstdint>

namespace kiln {

// rotary on x [..., D]: the first R = rotary_dim of each row rotate.
struct RotaryDims {
  Shape lead;               // x's dims except the last
  int64_t dim = 0;          // D, x's last dim
  int64_t rotary_dim = 0;   // R: even, <= D
  bool interleaved = false; // GPT-J pairs (2i, 2i+1) instead of halves
};
// rotary_dim and interleaved read from the attributes and checked against x.
StatusOr<RotaryDims> ResolveRotary(const OpAttrs &attrs, const TensorView &x);

// attention on q [B, Hq, Sq, D], k [B, Hkv, Skv, D], v [B, Hkv, Skv, Dv].
struct AttentionDims {
  int64_t batch = 0, q_heads = 0, kv_heads = 0; // q_heads % kv_heads == 0
  int64_t q_len = 0, kv_len = 0;                // Sq, Skv
  int64_t head_dim = 0, v_dim = 0;              // D (q, k), Dv (v, out)
};
// From in = {q, k, v, ...}, their ranks and dims checked against each other.
StatusOr<AttentionDims> ResolveAttention(const Inputs &in);

} // namespace kiln
