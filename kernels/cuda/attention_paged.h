// CUDA kernels of paged_attention (docs/fused-ops.md): a continuous batch's
// new tokens (prefill chunks and decode steps of N sequences, T tokens in
// all) stored into the paged KV cache in place, then each attending to its
// own sequence's positions 0..p(t) through the sequence's block table.
//
// Launches on one stream: the cache store; a one-block pass that splits
// each sequence's query rows into tiles of 16 (a prefix sum over the
// sequences, kept in scratch); and the attention, one block per (tile, KV
// head) with an online softmax over key tiles read through the block table.
// When the tiles are too few to fill the GPU (decoding), each tile's keys
// are split over several blocks (flash-decoding) whose partial results a
// last launch merges. Grid sizes and scratch depend only on the dims, never
// on the index values (which stay on the device), so the op can be captured
// in a CUDA graph.
//
// The index arrays are checked on the host before upload
// (core/paged_indices.h); the kernels still never read or write outside an
// operand on bad values: a slot outside the cache is not stored, a sequence
// whose query_start or context length is malformed is skipped (its rows of
// out are left unwritten), and a block table entry outside [0, NB) reads as
// zeros.
#pragma once

#include "kernels/cuda/fused_float.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

struct PagedDims {
  int64_t q_heads = 0, kv_heads = 0;      // q_heads % kv_heads == 0
  int64_t tokens = 0;                     // T
  int64_t head_dim = 0, v_dim = 0;        // D, Dv
  int64_t num_blocks = 0, block_size = 0; // NB, BS
  int64_t num_seqs = 0, max_blocks = 0;   // N, MB
  // Row strides between heads and between tokens: q's (rows of D) and out's
  // (rows of Dv) share them, k_new's (D) and v_new's (Dv) share theirs.
  // Head-major [1, H, T, *]: (T, 1); token-major [1, T, H, *]: (1, H).
  int64_t q_head_stride = 0, q_token_stride = 0;
  int64_t kv_head_stride = 0, kv_token_stride = 0;
  // When set, sequences with exactly one new token are attended by another
  // launch (decode_attention.h) and the query-tile kernels skip them.
  bool single_tokens_elsewhere = false;
  // Not dims: the op's score settings (kernels/attention_scores.h). The
  // token at position p reads positions WindowStart(p, window)..p only, so
  // the block table entries before a sequence's first such position are
  // never read; softcap > 0 caps the scaled scores.
  int64_t window = 0;
  float softcap = 0;
};

// Device pointers to the i64 index operands.
struct PagedIndexArrays {
  const int64_t *slots = nullptr;        // [T]
  const int64_t *query_start = nullptr;  // [N + 1]
  const int64_t *context_lens = nullptr; // [N]
  const int64_t *block_tables = nullptr; // [N, MB]
};

// The float operands, all of one type: q [1, Hq, T, D], k_new [1, Hkv, T, D],
// v_new [1, Hkv, T, Dv], k_cache [NB, Hkv, BS, D], v_cache [NB, Hkv, BS, Dv]
// (updated in place), out [1, Hq, T, Dv]; q, k_new, v_new and out may be
// token-major [1, T, H, *] instead, as PagedDims' row strides say.
struct PagedTensors {
  const void *q = nullptr, *k_new = nullptr, *v_new = nullptr;
  void *k_cache = nullptr, *v_cache = nullptr, *out = nullptr;
};

constexpr int64_t kMaxPagedHeadDim = 512;

// True when the kernels handle these dims: D and Dv at most
// kMaxPagedHeadDim, Hkv at most 65535 (the grid's y).
bool PagedAttentionSupported(const PagedDims &dims);

// Device scratch the op needs (the tile prefix and the split partials), in
// bytes; from the dims only.
int64_t PagedAttentionScratchBytes(const PagedDims &dims);

// Stores, then attends (see above). `type` is f32, f16 or bf16: the store
// copies bits, attention computes in f32 and out is rounded once. `scratch`
// holds PagedAttentionScratchBytes(dims) bytes of device memory.
cudaError_t PagedAttention(FusedFloat type, const PagedTensors &t, const PagedIndexArrays &idx,
                           const PagedDims &dims, float scale, void *scratch, cudaStream_t stream);

// The store alone (PagedAttention's first launch), for callers that attend
// with another kernel (attention_mma.h). Reads only t's k_new, v_new and
// caches.
cudaError_t PagedStore(FusedFloat type, const PagedTensors &t, const PagedIndexArrays &idx,
                       const PagedDims &dims, cudaStream_t stream);

} // namespace kiln::kernels::cuda
