// Attention over a paged KV cache for a continuous batch: the new tokens of
// many sequences, flattened into one batch of T tokens (docs/fused-ops.md,
// paged_attention).
#pragma once

#include "kernels/cpu/pointwise_cast.h"

#include <cstdint>

namespace kiln::kernels {

struct PagedAttentionDims {
  int64_t q_heads = 0, kv_heads = 0;      // q_heads % kv_heads == 0
  int64_t tokens = 0;                     // T, over all sequences
  int64_t head_dim = 0, v_dim = 0;        // D (q, k), Dv (v, out)
  int64_t num_blocks = 0, block_size = 0; // NB, BS of the caches
  int64_t num_seqs = 0, max_blocks = 0;   // N, MB (block_tables is [N, MB])
  // Row strides between heads and between tokens: q's (rows of D) and out's
  // (rows of Dv) share them, k_new's (D) and v_new's (Dv) share theirs.
  // Head-major [1, H, T, *]: (T, 1); token-major [1, T, H, *]: (1, H).
  int64_t q_head_stride = 0, q_token_stride = 0;
  int64_t kv_head_stride = 0, kv_token_stride = 0;
  // Not dims: the op's score settings (kernels/attention_scores.h). The
  // token at position p reads positions WindowStart(p, window)..p only;
  // softcap > 0 caps the scaled scores.
  int64_t window = 0;
  float softcap = 0;
};

// Sets the row strides for q, k_new, v_new and out from the other dims:
// head-major [1, H, T, *] or token-major [1, T, H, *].
void SetPagedStrides(PagedAttentionDims &dims, bool token_major);

// Which sequence each token belongs to and where its context lives. The
// values must already be checked against the contract (the runtime op does).
struct PagedBatch {
  const int64_t *slots = nullptr;        // [T]; cache slot of token t, < 0: not stored
  const int64_t *query_start = nullptr;  // [N + 1]; sequence s owns [qs[s], qs[s+1])
  const int64_t *context_lens = nullptr; // [N]; its new tokens are the last of these
  const int64_t *block_tables = nullptr; // [N, MB]; position j is in block [s][j / BS]
};

// Stores k_new/v_new [1, Hkv, T, D|Dv] into the caches [NB, Hkv, BS, D|Dv]
// at each token's slot, then, per query head h (KV head h / (Hq / Hkv)),
// out[0, h, t, :] = softmax_j(cap(scale * q[0, h, t, :] . k_j)) @ v_j over
// the context positions WindowStart(p(t), window) <= j <= p(t) of t's
// sequence, read through its block table (entries for blocks wholly before
// a sequence's window are never read).
// q is [1, Hq, T, D] and out [1, Hq, T, Dv], or all three token-major
// [1, T, H, *], as the dims' row strides say; rows are contiguous.
void PagedAttention(const float *q, const float *k_new, const float *v_new, float *k_cache,
                    float *v_cache, const PagedBatch &batch, float *out,
                    const PagedAttentionDims &dims, float scale);

// The same for f16 or bf16 operands (`kind`; all five float operands and
// out share it), held as their bit patterns. The caches are updated in
// place in that type. Attention computes in f32: each sequence's query rows
// and the context rows it reads are widened one KV head at a time (never a
// whole cache), and out is rounded to nearest even. Returns false, doing
// nothing, for a kind other than kF16 or kBF16.
bool PagedAttention(ElemType kind, const uint16_t *q, const uint16_t *k_new, const uint16_t *v_new,
                    uint16_t *k_cache, uint16_t *v_cache, const PagedBatch &batch, uint16_t *out,
                    const PagedAttentionDims &dims, float scale);

} // namespace kiln::kernels
