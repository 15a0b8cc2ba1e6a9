// Scaled dot-product attention with grouped KV heads (MHA, GQA, MQA), an
// optional broadcast mask and a causal limit, in f32 (docs/fused-ops.md).
#pragma once

#include <cstdint>

namespace kiln::kernels {

struct AttentionDims {
  int64_t batch = 0, q_heads = 0, kv_heads = 0; // q_heads % kv_heads == 0
  int64_t q_len = 0, kv_len = 0;                // Sq, Skv
  int64_t head_dim = 0, v_dim = 0;              // D (q, k), Dv (v, out)
};

enum class MaskKind { kNone, kAdditive, kBool };

// The mask as element strides over [b, h, i, j] (0 on broadcast dims), so a
// broadcast mask is read in place and never expanded. kAdditive: floats
// added to the scores; kBool: bytes, zero masks the score to -inf.
struct AttentionMask {
  MaskKind kind = MaskKind::kNone;
  const void *data = nullptr;
  int64_t strides[4] = {0, 0, 0, 0};
};

// out[b, h, i, :] = softmax_j(cap(scale * q[b,h,i,:] . k[b,g,j,:]) + mask) @ v[b,g]
// with g = h / (Hq / Hkv), cap the soft-cap SoftCap(s, softcap)
// (kernels/attention_scores.h; 0: none); causal also masks j > i + (Skv - Sq). q, k, v and
// out are contiguous [B, H, S, D]. A fully masked row is zeros (the unfused
// Softmax gives NaN there; SDPA exports guard it to zeros).
void Attention(const float *q, const float *k, const float *v, const AttentionMask &mask,
               float *out, const AttentionDims &dims, float scale, bool causal,
               float softcap = 0.0f);

} // namespace kiln::kernels
