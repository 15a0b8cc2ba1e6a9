// What the engine needs from a model: run one scheduled step over the paged
// KV cache and return logits for the sequences that sample. The executor
// plugs in here; the scheduler tests plug in a fake.
#pragma once

#include "engine/scheduler.h"
#include "kiln/sampler.h"
#include "kiln/status.h"

#include <cstdint>
#include <vector>

namespace kiln::engine {

// One sampled row of a step, for a runner that samples on its device.
struct RowSampling {
  const SamplingParams *params = nullptr;
  const Sequence *seq = nullptr; // its prompt and output: the penalties' history
  const std::vector<int32_t> *suppressed = nullptr;
  uint64_t uniform_bits = 0; // Sampler::PeekUniformBits, for a row that may draw
};

struct RowSample {
  SampledToken sample;
  bool drew = false; // the row used its uniform: Sampler::ConsumeUniform
};

class ModelRunner {
public:
  virtual ~ModelRunner() = default;

  // Width of one logits row.
  virtual int64_t vocab_size() const = 0;
  // The paged KV cache the runner holds: blocks of block_size() tokens.
  virtual int64_t num_blocks() const = 0;
  virtual int64_t block_size() const = 0;
  // The sliding window every layer applies, or 0 when some layer reads the
  // whole context (core/paged_indices.h, PagedKvWindow): the block manager
  // releases blocks behind it.
  virtual int64_t kv_window() const { return 0; }

  // Computes every chunk of `step` as one flat batch: for chunk c, the
  // tokens at positions [c.start, c.start + c.num_tokens) of c.seq attend to
  // the KV at positions [0, c.start) already in c.seq->block_table's blocks
  // and write their own KV there. Resizes `logits` to NumSampling() rows of
  // vocab_size(), one per chunk with `samples`, in step order, taken at the
  // chunk's last position; a chunk with `all_logits` gives a row for each of
  // its positions there instead. Never writes a block another sequence holds.
  virtual Status Run(const Step &step, std::vector<float> &logits) = 0;

  // Whether RunAndSample works: the runner samples where the logits are
  // and only tokens (and logprobs) come back.
  virtual bool SamplesOnDevice() const { return false; }
  // Run, then samples each row of `rows` (one per chunk with `samples`, in
  // step order) as the CPU Sampler would with the same draw; `out` gets one
  // RowSample per row.
  virtual Status RunAndSample(const Step &step, const std::vector<RowSampling> &rows,
                              std::vector<RowSample> &out) {
    (void)step;
    (void)rows;
    (void)out;
    return Unimplemented("this model runner samples on the host");
  }
};

} // namespace kiln::engine
