// The index arrays of one ragged step over a paged KV cache (the plan's
// ragged inputs, docs/fused-ops.md): which cache slot each new token's KV
// goes to, where each sequence's tokens start, how long each context is,
// and which blocks each sequence reads. The model runner checks them once
// per step on the host, before any backend sees them, so device kernels can
// read them without re-checking or copying them back.
#pragma once

#include "kiln/plan.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

#include <cstdint>
#include <vector>

namespace kiln {

struct PagedIndices {
  const int64_t *slots = nullptr;        // [tokens]: cache slot, or < 0 for "not stored"
  const int64_t *query_start = nullptr;  // [num_seqs + 1]: 0, non-decreasing, ends at tokens
  const int64_t *context_lens = nullptr; // [num_seqs]: >= the sequence's new tokens
  const int64_t *block_tables = nullptr; // [num_seqs, max_blocks]
  int64_t tokens = 0, num_seqs = 0, max_blocks = 0;
};

// InvalidArgument naming the first bad entry when a slot lies outside the
// cache's num_blocks * block_size slots, query_start is malformed, a
// context is shorter than its new tokens or longer than its table, or a
// block a context reads is outside [0, num_blocks).
Status CheckPagedIndices(const PagedIndices &p, int64_t num_blocks, int64_t block_size);

// For a caller that binds a plan's graph inputs itself (kiln exec) and runs
// it on a device, whose kernels read index arrays without checking them:
// checks every paged_attention op's index operands, as bound in `inputs`
// (plan.inputs() order, after a successful Executor::Bind), against its
// key cache. InvalidArgument naming the op when an index operand or the
// cache is not a graph input bound in host memory (its values cannot be
// checked before a kernel reads them), or as CheckPagedIndices.
Status CheckPagedInputs(const Plan &plan, const std::vector<TensorView> &inputs);

// The sliding window that bounds what the plan's paged_attention ops read:
// the largest `window` among them, or 0 when any of them has none (or the
// plan has no paged_attention). A sequence's positions before its next
// token's position minus this window + 1 are never read again, so their
// blocks can be freed.
int64_t PagedKvWindow(const Plan &plan);

} // namespace kiln
