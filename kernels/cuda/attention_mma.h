// Prefill attention on the tensor cores (paged_attention's query chunks):
// causal flash attention (FA2-style online softmax, f32 accumulation) with
// mma.sync m16n8k16 on f16/bf16, the keys and values read from the paged
// KV cache through each sequence's block table.
//
// Each block takes 64 query rows (one sequence, one query head) in 4 warps
// of 16 rows and walks 64 keys at a time, the next key tile loading
// (cp.async) while the current one is multiplied. Query row i of a sequence
// with n new tokens and context c sits at position c - n + i and attends
// keys 0..that position. The grid is sized from the dims only (a one-block
// scan over query_start turns tile indices into sequences on the device), so
// a launch can be captured in a CUDA graph.
//
// Malformed indices are handled as paged_attention.h says: a sequence whose
// query_start or context length is out of range is skipped, a block-table
// entry outside [0, NB) reads as zero keys and values.
#pragma once

#include "kernels/cuda/fused_float.h"
#include "kernels/cuda/attention_paged.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// Element strides of q [tokens, heads, D] and out [tokens, heads, D] as laid
// out in memory (q [1, Hq, T, D] contiguous: token D, head T * D).
struct PrefillStrides {
  int64_t q_token = 0, q_head = 0;
  int64_t out_token = 0, out_head = 0;
};

// The operands: q and out through `strides`, the caches [NB, Hkv, BS, D]
// contiguous.
struct PrefillTensors {
  const void *q = nullptr, *k_cache = nullptr, *v_cache = nullptr;
  void *out = nullptr;
};

// Whether the kernel takes these operands: f16 or bf16, D == Dv in {64, 80,
// 96, 128}, at most 65535 query tiles (T / 64 + N), every pointer 16-byte
// aligned and every stride a multiple of 8 elements.
bool PrefillAttentionSupported(FusedFloat type, const PagedDims &dims, const PrefillTensors &t,
                               const PrefillStrides &strides);

// Whether a step of these dims has enough query rows per sequence (on
// average, at least 16) for the prefill kernel to beat the split-key one.
bool PrefillAttentionPreferred(const PagedDims &dims);

// Device scratch for the tile scan, in bytes; from the dims only.
int64_t PrefillAttentionScratchBytes(const PagedDims &dims);

// Attends every new token of the batch (the cache already holds the new
// keys and values). `scratch` holds PrefillAttentionScratchBytes(dims)
// bytes. Returns cudaErrorInvalidValue when not supported.
cudaError_t PrefillAttention(FusedFloat type, const PrefillTensors &t, const PagedIndexArrays &idx,
                             const PagedDims &dims, const PrefillStrides &strides, float scale,
                             void *scratch, cudaStream_t stream);

} // namespace kiln::kernels::cuda
