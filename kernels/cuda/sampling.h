// On-device token sampling: the CPU sampler's rules (runtime/src/engine/
// sampler.cpp) over logits rows that stay on the device; only the
// SampleResult records come back.
//
// Per row, one block: the penalties (ApplyPenalties, in place: repetition,
// then presence and frequency, then suppression, in f32 with the CPU's
// rounding), then greedy (the lowest id of the maximum, NaN skipped) or
// temperature with top-k, top-p and min-p and one draw. The candidates'
// order is the CPU's: by logit, descending, ties by lower id. No row is
// sorted: each cut (the k-th candidate, the top-p prefix, the drawn token)
// is found by a radix descent over the 64-bit order key, summing the
// candidates' counts or fixed-point masses (core/sampling_contract.h) per digit.
// Masses are exact integers, so the result does not depend on the order of
// the additions; the CPU sums doubles in order, so the two agree but for a
// uniform within ~1e-12 of a boundary.
//
// Launchers enqueue on `stream` and return the launch's error; none
// synchronizes or allocates.
#pragma once

#include "core/sampling_contract.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// The contract's records and constants, by their names here.
using sampling::kMassBits;
using sampling::kMaxSampleVocab;
using sampling::kMaxTopLogprobs;
using sampling::kPenaltyRepeated;
using sampling::kPenaltySuppressed;
using sampling::kSampleOpType;
using sampling::PenaltyEntry;
using sampling::SampleResult;
using sampling::SampleRow;

// Applies each row's PenaltyEntry records to its logits row, in place.
cudaError_t ApplyPenalties(float *logits, int64_t vocab, const SampleRow *rows, int64_t num_rows,
                           const PenaltyEntry *entries, cudaStream_t stream);

// Samples each row; writes results[r] for r < num_rows.
cudaError_t SampleRows(const float *logits, int64_t vocab, const SampleRow *rows, int64_t num_rows,
                       SampleResult *results, cudaStream_t stream);

} // namespace kiln::kernels::cuda
