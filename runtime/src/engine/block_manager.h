// The paged KV cache's bookkeeping: one pool of fixed-size blocks, a block
// table per sequence, and prefix caching by a hash chain over full blocks.
// It owns no device memory; the model runner maps block ids to its KV tensors.
#pragma once

#include "engine/sequence.h"
#include "kiln/status.h"

#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

namespace kiln::engine {

// Blocks that fit in a KV memory budget of `bytes`. InvalidArgument when
// bytes_per_block is not positive or the budget holds no block at all.
StatusOr<int64_t> BlocksForBudget(int64_t bytes, int64_t bytes_per_block);

class BlockManager {
public:
  // InvalidArgument unless 1 <= num_blocks <= INT32_MAX and block_size >= 1.
  static StatusOr<std::unique_ptr<BlockManager>> Create(int64_t num_blocks, int64_t block_size,
                                                        bool prefix_caching);

  int64_t num_blocks() const { return static_cast<int64_t>(blocks_.size()); }
  int64_t block_size() const { return block_size_; }
  bool prefix_caching() const { return prefix_caching_; }
  // Blocks that can be handed out now: never used, plus cached ones nobody
  // holds (they are evicted on demand).
  int64_t NumFreeBlocks() const { return static_cast<int64_t>(free_.size() + evictable_.size()); }
  // Blocks registered in the prefix cache, held or not.
  int64_t NumCachedBlocks() const { return static_cast<int64_t>(cached_.size()); }
  // Blocks needed to hold `tokens` tokens.
  int64_t BlocksFor(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  // Sequences holding `block` (0 when it is free or cached-free).
  int32_t RefCount(int32_t block) const { return blocks_[block].ref_count; }

  // How many tokens past num_computed_tokens the sequence's blocks could
  // cover after taking every free block.
  int64_t AppendableTokens(const Sequence &seq) const;
  // True when blocks for num_computed_tokens + n tokens can be ensured now.
  bool CanAppend(const Sequence &seq, int64_t n) const { return n <= AppendableTokens(seq); }
  // Grows seq.block_table to cover num_computed_tokens + n tokens.
  // ResourceExhausted (and no change) when the pool is short.
  Status Append(Sequence &seq, int64_t n);

  // For a sequence holding no blocks: takes the longest cached chain of full
  // blocks that prefixes its tokens, shares them (refcount + 1) and sets
  // num_computed_tokens to the tokens they cover. The last token is never
  // matched, so the model still computes it and yields logits. Returns the
  // tokens matched; 0 without prefix caching or when the sequence holds blocks.
  int64_t Match(Sequence &seq);
  // Registers, under its chain hash, every full block of `seq` whose KV is
  // now computed, so later sequences can match it. Call after
  // num_computed_tokens grows.
  void CacheFullBlocks(Sequence &seq);
  // The sliding window every layer applies (PagedKvWindow; 0: some layer
  // reads the whole context, and nothing is released behind it).
  void SetWindow(int64_t window) { window_ = window > 0 ? window : 0; }
  int64_t window() const { return window_; }
  // With a window: releases the blocks of `seq` that hold only positions
  // before its next token's window (num_computed_tokens - window + 1), so a
  // long generation holds about window / block_size blocks. Their entries
  // become kReleasedBlock; a cached block stays in the prefix cache
  // (evictable) for other sequences. Call after CacheFullBlocks.
  void ReleaseBehindWindow(Sequence &seq);
  // Releases the sequence's blocks; its KV is gone, so num_computed_tokens
  // becomes 0. Cached blocks that nobody holds any more become evictable,
  // the sequence's tail first, so shared prefixes outlive their tails.
  void Free(Sequence &seq);

private:
  struct Block {
    int32_t ref_count = 0;
    bool hashed = false; // hash, parent_hash and tokens are valid
    uint64_t hash = 0;
    uint64_t parent_hash = 0;
    std::vector<int32_t> tokens;               // kept to reject hash collisions
    std::list<int32_t>::iterator evictable_it; // valid while in evictable_
    bool in_evictable = false;
  };

  BlockManager(int64_t num_blocks, int64_t block_size, bool prefix_caching);
  // A block with refcount 1: a never-used one first, else the least recently
  // freed cached one, evicted from the cache.
  int32_t Allocate();
  void Release(int32_t id);
  // Whether `id` is the cache's entry for (parent_hash, tokens).
  bool IsCachedAs(int32_t id, uint64_t parent_hash, const std::vector<int32_t> &tokens) const;
  void TokensOfBlock(const Sequence &seq, int64_t index, std::vector<int32_t> *tokens) const;

  int64_t block_size_;
  bool prefix_caching_;
  int64_t window_ = 0;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;                    // never used or uncached: no KV worth keeping
  std::list<int32_t> evictable_;                 // cached, unheld; front = least recently freed
  std::unordered_map<uint64_t, int32_t> cached_; // chain hash -> block
};

} // namespace kiln::engine
