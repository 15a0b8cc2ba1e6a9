// A model without weights for engine tests. Its "KV" at a position is a hash
// of the sequence's tokens up to that position, read back from the paged
// cache like attention would, so a wrong block table, a stale or
// overwritten block or a bad prefix-cache hit changes the tokens it makes.
#pragma once

#include "engine/block_manager.h"
#include "engine/model_runner.h"

#include <cstdint>
#include <vector>

namespace kiln::engine::testing {

class FakeModel : public ModelRunner {
public:
  FakeModel(const BlockManager &blocks, int64_t vocab);

  int64_t vocab_size() const override { return vocab_; }
  int64_t num_blocks() const override { return blocks_.num_blocks(); }
  int64_t block_size() const override { return blocks_.block_size(); }
  // One-hot logits at the token NextToken gives for the KV read from the
  // cache. Internal when the cached context disagrees with the sequence's
  // tokens, a chunk runs past its blocks, or a write hits a shared block.
  Status Run(const Step &step, std::vector<float> &logits) override;

  // What a correct engine generates for a request: the ground truth, computed
  // without any cache. Stops after max_new tokens or at `eos` (included).
  std::vector<int32_t> Reference(int64_t id, const std::vector<int32_t> &prompt, int max_new,
                                 int32_t eos) const;

private:
  // The KV of `token` at `pos` after the KV `prev` of the position before.
  static uint64_t NextKv(uint64_t prev, int32_t token, int64_t pos);
  int32_t NextToken(int64_t seq_id, uint64_t kv) const;
  Status RunChunk(const ScheduledChunk &c, float *logits_row);

  const BlockManager &blocks_;
  int64_t vocab_;
  std::vector<uint64_t> kv_; // slot b * block_size + i of block b
};

} // namespace kiln::engine::testing
