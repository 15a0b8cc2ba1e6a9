// paged_attention's operand order, dims and index checks, shared by its
// shape rule (core/shapes/attention_paged.cpp) and every backend's kernel
// (docs/fused-ops.md). Every shape and index is checked before anything is
// written, so a rejected call leaves the caches as they were.
#pragma once

#include "core/kernel.h"

#include <cstdint>

namespace kiln::paged_attention {

// Operand order (docs/fused-ops.md).
enum Operand { kQ, kKNew, kVNew, kKCache, kVCache, kSlots, kQueryStart, kContextLens, kTables };

// The `layout` attribute: how q, k_new, v_new and the result order their
// dims. "bhsd" (the default): [1, H, T, D]; "bshd": token-major [1, T, H, D],
// the layout the qkv projection writes, so no transposes are needed.
enum class Layout { kBhsd, kBshd };

StatusOr<Layout> LayoutOf(const OpAttrs &attrs);

struct Dims {
  Layout layout = Layout::kBhsd;
  int64_t q_heads = 0, kv_heads = 0;      // q_heads % kv_heads == 0
  int64_t tokens = 0;                     // T, over all sequences
  int64_t head_dim = 0, v_dim = 0;        // D (q, k), Dv (v, out)
  int64_t num_blocks = 0, block_size = 0; // NB, BS of the caches
  int64_t num_seqs = 0, max_blocks = 0;   // N, MB (block_tables is [N, MB])
  // Row strides (in rows of D for q, of Dv for the result, which share
  // them; of D and Dv for k_new and v_new) between heads and between tokens:
  // bhsd (T, 1), bshd (1, H).
  int64_t q_head_stride = 0, q_token_stride = 0;
  int64_t kv_head_stride = 0, kv_token_stride = 0;
};

// Dims from q [1, Hq, T, D] (bshd: [1, T, Hq, D]), k_cache [NB, Hkv, BS, D],
// v_new (Dv) and block_tables [N, MB], every operand's dtype, rank and dims
// checked against them. `in` holds the 9 operands; `attrs` the op's layout.
StatusOr<Dims> ResolveDims(const OpAttrs &attrs, const Inputs &in);

// The result's shape: [1, Hq, T, Dv], or [1, T, Hq, Dv] for bshd.
Shape ResultShape(const Dims &d);

// The index operands' values (slots, query_start, context_lens,
// block_tables) checked against `d` when they are known on the host; Ok
// without reading when any of them has no data yet.
Status CheckIndices(const Inputs &in, const Dims &d);

} // namespace kiln::paged_attention
