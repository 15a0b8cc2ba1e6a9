// paged_attention's operand order, dims and index checks, shared by its
// shape rule (core/shapes/paged_attention.cpp) and every backend's kernel
// (docs/fused-ops.md). Every shape and index is checked before anything is
// written, so a rejected call leaves the caches as they were.
#pragma once

#include "core/kernel.h"

#include <cstdint>

namespace kiln::paged_attention {

// Operand order (docs/fused-ops.md).
enum Operand { kQ, kKNew, kVNew, kKCache, kVCache, kSlots, kQueryStart, kContextLens, kTables };

struct Dims {
  int64_t q_heads = 0, kv_heads = 0;      // q_heads % kv_heads == 0
  int64_t tokens = 0;                     // T, over all sequences
  int64_t head_dim = 0, v_dim = 0;        // D (q, k), Dv (v, out)
  int64_t num_blocks = 0, block_size = 0; // NB, BS of the caches
  int64_t num_seqs = 0, max_blocks = 0;   // N, MB (block_tables is [N, MB])
};

// Dims from q [1, Hq, T, D], k_cache [NB, Hkv, BS, D], v_new (Dv) and
// block_tables [N, MB], every operand's dtype, rank and dims checked
// against them. `in` holds the 9 operands.
StatusOr<Dims> ResolveDims(const Inputs &in);

// The index operands' values (slots, query_start, context_lens,
// block_tables) checked against `d` when they are known on the host; Ok
// without reading when any of them has no data yet.
Status CheckIndices(const Inputs &in, const Dims &d);

} // namespace kiln::paged_attention
