// Decode steps padded to a few shapes, so a few captured runs (CUDA graphs)
// serve every batch size: a decode step of N sequences runs as one of
// DecodeBucket(N) sequences, its block table as TableBucket(width) wide.
// The padding sequences are one token each that stores no KV (slot -1),
// attends to one position of block 0, and samples a logits row that nobody
// reads: the real sequences' rows come first and are computed as they would
// be unpadded (every op of a decoder is per row or per sequence).
#pragma once

#include "engine/scheduler.h"

#include <cstdint>
#include <vector>

namespace kiln::engine {

// A step's flat-batch index arrays, as the plan's ragged inputs take them.
struct StepArrays {
  std::vector<int64_t> ids, pos, slots, qstart, ctx, tables, rows;
  int64_t width = 1; // block table columns; tables holds seqs * width
  int64_t seqs() const { return static_cast<int64_t>(ctx.size()); }
};

// Whether every chunk of `step` decodes: one token, sampled.
bool IsDecodeOnly(const Step &step);

// The number of sequences a decode step of `n` runs as: the next power of
// two, but never more than max(n, cap) when cap > 0 (the step's largest
// batch, so the bucket stays within the activations reserved for it).
int64_t DecodeBucket(int64_t n, int64_t cap);

// A block table width padded to the next power of two.
int64_t TableBucket(int64_t width);

// Pads a decode step's arrays (one token per sequence, every sequence
// sampling, rows in sequence order) to `seqs` sequences and `width` table
// columns, both at least the current ones. Returns false, changing
// nothing, when the arrays are not such a step.
bool PadDecodeStep(StepArrays &a, int64_t seqs, int64_t width);

} // namespace kiln::engine
