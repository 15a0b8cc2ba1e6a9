// One generation request as the engine sees it: its tokens, how much of its
// KV is in the cache, and the blocks that hold it.
#pragma once

#include "kiln/response.h"

#include <cstdint>
#include <vector>

namespace kiln::engine {

enum class SequenceStatus { kWaiting, kRunning, kFinished };

// A block_table entry whose block was released (BlockManager::ReleaseBehindWindow).
constexpr int32_t kReleasedBlock = -1;

struct Sequence {
  int64_t id = 0;
  std::vector<int32_t> prompt;
  std::vector<int32_t> output; // sampled tokens; kept across preemption
  int max_new_tokens = 0;

  // Owned by the Scheduler and the BlockManager from Scheduler::Add on.
  SequenceStatus status = SequenceStatus::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;
  // Tokens (prompt, then output) whose KV is in the cache, at positions
  // [0, num_computed_tokens).
  int64_t num_computed_tokens = 0;
  // Physical block of each logical block: position p lives in
  // block_table[p / block_size], slot p % block_size. kReleasedBlock marks
  // a block released because it is behind every layer's sliding window.
  std::vector<int32_t> block_table;
  // Leading blocks of block_table whose chain hash the BlockManager knows,
  // and the chain hash of the last of them.
  int64_t num_hashed_blocks = 0;
  uint64_t chain_hash = 0;
  // Leading blocks of block_table released behind the window.
  int64_t num_released_blocks = 0;
  int64_t arrival = -1; // order of Scheduler::Add; lower came first
  int num_preemptions = 0;
  // Tokens whose KV came from the prefix cache at admission, over all admissions.
  int64_t num_prefix_hit_tokens = 0;

  // Prompt plus output.
  int64_t NumTokens() const { return static_cast<int64_t>(prompt.size() + output.size()); }
  // Tokens whose KV still has to be computed; 1 for a sequence in decode.
  int64_t NumUncomputed() const { return NumTokens() - num_computed_tokens; }
  // Token at position `pos` of prompt + output; pos must be in [0, NumTokens()).
  int32_t TokenAt(int64_t pos) const {
    const int64_t p = static_cast<int64_t>(prompt.size());
    return pos < p ? prompt[pos] : output[pos - p];
  }
  bool finished() const { return status == SequenceStatus::kFinished; }
};

} // namespace kiln::engine
