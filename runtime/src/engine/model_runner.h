// What the engine needs from a model: run one scheduled step over the paged
// KV cache and return logits for the sequences that sample. The executor
// plugs in here; the scheduler tests plug in a fake.
#pragma once

#include "engine/scheduler.h"
#include "kiln/status.h"

#include <cstdint>
#include <vector>

namespace kiln::engine {

class ModelRunner {
public:
  virtual ~ModelRunner() = default;

  // Width of one logits row.
  virtual int64_t vocab_size() const = 0;
  // The paged KV cache the runner holds: blocks of block_size() tokens.
  virtual int64_t num_blocks() const = 0;
  virtual int64_t block_size() const = 0;

  // Computes every chunk of `step` as one flat batch: for chunk c, the
  // tokens at positions [c.start, c.start + c.num_tokens) of c.seq attend to
  // the KV at positions [0, c.start) already in c.seq->block_table's blocks
  // and write their own KV there. Resizes `logits` to NumSampling() rows of
  // vocab_size(), one per chunk with `samples`, in step order, taken at the
  // chunk's last position. Never writes a block another sequence holds.
  virtual Status Run(const Step &step, std::vector<float> &logits) = 0;
};

} // namespace kiln::engine
