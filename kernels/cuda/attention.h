// CUDA kernel of dense scaled dot-product attention (docs/fused-ops.md,
// attention): MHA, GQA and MQA heads, an optional additive (f32) or bool
// mask that broadcasts to [B, Hq, Sq, Skv], and a causal limit for queries
// that are the last Sq of Skv positions.
#pragma once

#include "kernels/cuda/fused_float.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

struct DenseAttentionDims {
  int64_t batch = 0, q_heads = 0, kv_heads = 0; // q_heads % kv_heads == 0
  int64_t q_len = 0, kv_len = 0;                // Sq, Skv
  int64_t head_dim = 0, v_dim = 0;              // D (q, k), Dv (v, out)
  float softcap = 0; // not a dim: the score soft-cap (attention_scores.h); 0: none
};

enum class DenseMaskKind { kNone, kAdditive, kAdditiveF16, kAdditiveBF16, kBool };

// The mask as element strides over [b, h, i, j] (0 where it broadcasts);
// kAdditive*: f32, f16 or bf16 values added to the scores (a half plan's
// mask is half); kBool: bytes, zero masks to -inf.
struct DenseMask {
  DenseMaskKind kind = DenseMaskKind::kNone;
  const void *data = nullptr;
  int64_t strides[4] = {0, 0, 0, 0};
};

constexpr int64_t kMaxDenseHeadDim = 512;

// True when the kernel handles these dims: D and Dv at most kMaxDenseHeadDim,
// B and Hkv at most 65535 (the grid's y and z).
bool DenseAttentionSupported(const DenseAttentionDims &dims);

// out[b, h, i, :] = softmax_j(cap(scale * q[b,h,i,:] . k[b,g,j,:]) + mask) @ v[b,g]
// with g = h / (Hq / Hkv), cap the dims' soft-cap; causal also masks j > i + (Skv - Sq); a row with
// every key masked is zeros. q, k, v, out are contiguous [B, H, S, D] of
// `type` (f32, f16, bf16; computed in f32, out rounded once).
cudaError_t DenseAttention(FusedFloat type, const void *q, const void *k, const void *v,
                           const DenseMask &mask, void *out, const DenseAttentionDims &dims,
                           float scale, bool causal, cudaStream_t stream);

} // namespace kiln::kernels::cuda
