// Decode attention for paged_attention (docs/gpu.md, "Decode attention"):
// the sequences of a batch that add one new token each, attended by a
// kernel made for them rather than by the query tiles of the split-key and
// prefill kernels, which give a decode row a tile of 16 or 64 rows and read
// a sequence's keys once per query head.
//
// One block takes one sequence and up to kDecodeHeads query heads of one
// KV group, so the group's keys are read once for all of its heads; a warp
// takes 32 keys at a time (a lane per key for the scores, a lane per column
// for the weighted sum). When the sequences are too few to fill the GPU,
// each one's keys are split over several blocks (flash-decoding) and a
// second launch merges the splits. The grid and scratch depend on the dims
// only, so a launch can be captured in a CUDA graph.
//
// Two modes:
//  - kAllSequences, for a step whose tokens are as many as its sequences (a
//    decode step): every sequence is attended here, the new keys and values
//    are stored into the cache by the same launch (read from k_new and v_new
//    for the new positions, so the store and the reads do not race; a
//    padding token, whose slot stores nothing, reads its position from the
//    cache as the op's contract says), and a
//    sequence with several new tokens (possible, if unusual, in such a step)
//    attends them one after another without a split.
//  - kSingleTokens, beside the query-tile kernels in a mixed step: only the
//    sequences with exactly one new token, after the store (PagedStore), the
//    tile kernels told to skip them (PagedDims::single_tokens_elsewhere).
//
// Malformed indices are handled as paged_attention.h says.
#pragma once

#include "kernels/cuda/fused_float.h"
#include "kernels/cuda/attention_paged.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

enum class DecodeMode { kAllSequences, kSingleTokens };

// Query heads one block attends.
constexpr int64_t kDecodeHeads = 4;
// The largest D and Dv the kernel takes.
constexpr int64_t kMaxDecodeHeadDim = 256;

// Whether the kernel takes these operands: f32, f16 or bf16; D and Dv at
// most kMaxDecodeHeadDim; the caches and k_new 16-byte aligned with rows of
// whole 16-byte vectors (the keys are read 16 bytes at a time); grid limits.
bool DecodeAttentionSupported(FusedFloat type, const PagedDims &dims, const PagedTensors &t);

// How a sequence's keys are split over blocks when the sequences are too
// few to fill the GPU: splits are added until the step makes about
// `fill_blocks` blocks (at most kMaxDecodeFillBlocks), each split holding at
// least `min_keys` keys of the longest context the block tables allow. The
// defaults are the engine's; kiln_decode_bench times others.
constexpr int64_t kMaxDecodeFillBlocks = 1056;
struct DecodeSplitPolicy {
  // 4 an SM of an H200: what the GPU suites and the 8B benches ran. 264
  // measured faster in kiln_decode_bench, but only 0.5% faster at batch 1
  // on the 8B (KILN_DECODE_FILL_BLOCKS=264, docs/gpu.md): inside the spread,
  // so the default stays.
  int64_t fill_blocks = 528;
  int64_t min_keys = 32;     // one warp's
};

// Device scratch for the split partials, in bytes (0 without splits); from
// the dims only.
int64_t DecodeAttentionScratchBytes(const PagedDims &dims, const DecodeSplitPolicy &policy = {});

// How many blocks share one sequence's keys, from the dims only (exposed
// for tests, which pick dims on both sides of 1).
int64_t DecodeAttentionSplits(const PagedDims &dims, const DecodeSplitPolicy &policy = {});

// Attends as `mode` says. `scratch` holds DecodeAttentionScratchBytes(dims,
// policy) bytes. Returns cudaErrorInvalidValue when not supported (or when
// the policy's numbers are out of range).
cudaError_t DecodeAttention(FusedFloat type, const PagedTensors &t, const PagedIndexArrays &idx,
                            const PagedDims &dims, float scale, DecodeMode mode, void *scratch,
                            cudaStream_t stream, const DecodeSplitPolicy &policy = {});

} // namespace kiln::kernels::cuda
