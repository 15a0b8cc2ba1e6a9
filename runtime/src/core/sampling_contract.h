// The backend-neutral sampling contract: the records a device sampler reads
// and writes (the CUDA backend's kernels/cuda/sampling.cu is the one there
// is), shared with the engine that fills them (engine/device_sampler.cpp).
// Plain C++, no device header: the engine compiles without any toolkit and
// includes no backend or kernel. The rules they encode are the CPU sampler's
// (engine/sampler.cpp); kernels/cuda/sampling.h says how each is reproduced.
#pragma once

#include <cstdint>

namespace kiln::sampling {

// The op type a device backend's kernel table holds the sampler under. It is no plan
// op: the engine's runner calls it on the logits the executor left on the
// device. Operands: in[0] the logits, f32 [rows, vocab]; in[1] the
// SampleRow records (u8 bytes, L of them); in[2] the PenaltyEntry records
// (u8 bytes, possibly none). out[0]: L SampleResult records (u8 bytes).
inline constexpr const char *kSampleOpType = "kiln.sample";

// The most top logprobs one row returns (kiln::kMaxLogprobs).
inline constexpr int kMaxTopLogprobs = 20;

// Fixed-point scale of a candidate's unnormalized probability exp((l -
// max) / T) in [0, 1]: q = round(p * 2^40). Sums of up to 2^23 of them fit
// in 64 bits, so masses add exactly, in any order.
inline constexpr int kMassBits = 40;
// The largest vocabulary the sampler takes (so the masses cannot overflow).
inline constexpr int64_t kMaxSampleVocab = int64_t{1} << 23;

// One sampled row: where its logits are and how to draw from them.
struct SampleRow {
  int64_t logits_row = 0; // row of in[0]
  float temperature = 0;  // 0: greedy
  float top_p = 1;
  float min_p = 0;
  float repetition_penalty = 1;
  float presence_penalty = 0;
  float frequency_penalty = 0;
  int32_t top_k = 0;
  int32_t logprobs = 0;      // top logprobs wanted, <= kMaxTopLogprobs
  int32_t penalty_begin = 0; // this row's PenaltyEntry records: [begin, end)
  int32_t penalty_end = 0;
  int32_t counted = 0; // 1: presence and frequency penalties apply
  int32_t pad = 0;
  // The draw, as the CPU sampler makes it: u = uniform_bits * 2^-53.
  uint64_t uniform_bits = 0;
};

enum PenaltyFlags : int32_t {
  kPenaltyRepeated = 1,   // in the history: the repetition penalty applies
  kPenaltySuppressed = 2, // forbidden this step: its logit becomes -inf
};

// A distinct token id of a row's history or suppressed list.
struct PenaltyEntry {
  int32_t token = 0;
  int32_t generated = 0; // times generated (presence/frequency), 0 if none
  int32_t flags = 0;     // PenaltyFlags
};

struct SampleResult {
  int32_t token = 0;
  int32_t drew = 0; // 1 when the row consumed its uniform
  float logprob = 0;
  int32_t num_top = 0;
  int32_t top_tokens[kMaxTopLogprobs] = {};
  float top_logprobs[kMaxTopLogprobs] = {};
};

} // namespace kiln::sampling
