// BlockManager: block allocation, reference counts, and the prefix cache.
//
// A full block's identity is a hash chain: hash(parent block's hash, the
// block's token ids). Two blocks with the same tokens after different
// prefixes therefore differ, as their KV does. The cache maps a chain hash to
// the block holding that KV; a cached block nobody holds sits in an LRU list
// and is evicted only when a new block is needed and no unused one is left.
#include "engine/block_manager.h"

#include <algorithm>
#include <limits>
#include <string>

namespace kiln::engine {
namespace {

constexpr uint64_t kRootHash = 0; // the parent hash of a sequence's first block

// splitmix64's finalizer: a cheap, well-mixed 64-bit permutation.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t ChainHash(uint64_t parent, const std::vector<int32_t> &tokens) {
  uint64_t h = Mix(parent);
  for (int32_t t : tokens)
    h = Mix(h ^ static_cast<uint32_t>(t));
  return h;
}

} // namespace

StatusOr<int64_t> BlocksForBudget(int64_t bytes, int64_t bytes_per_block) {
  if (bytes_per_block <= 0)
    return InvalidArgument("bytes per KV block must be positive, got " +
                           std::to_string(bytes_per_block));
  if (bytes < bytes_per_block)
    return InvalidArgument("a KV cache budget of " + std::to_string(bytes) +
                           " bytes holds no block of " + std::to_string(bytes_per_block) +
                           " bytes");
  return bytes / bytes_per_block;
}

StatusOr<std::unique_ptr<BlockManager>> BlockManager::Create(int64_t num_blocks, int64_t block_size,
                                                             bool prefix_caching) {
  if (num_blocks < 1 || num_blocks > std::numeric_limits<int32_t>::max())
    return InvalidArgument("number of KV blocks must be in [1, 2^31), got " +
                           std::to_string(num_blocks));
  if (block_size < 1)
    return InvalidArgument("KV block size must be >= 1 token, got " + std::to_string(block_size));
  return std::unique_ptr<BlockManager>(new BlockManager(num_blocks, block_size, prefix_caching));
}

BlockManager::BlockManager(int64_t num_blocks, int64_t block_size, bool prefix_caching)
    : block_size_(block_size), prefix_caching_(prefix_caching), blocks_(num_blocks) {
  // Popped from the back, so blocks are first handed out as 0, 1, 2, ...
  free_.reserve(num_blocks);
  for (int64_t i = num_blocks - 1; i >= 0; --i)
    free_.push_back(static_cast<int32_t>(i));
}

int64_t BlockManager::AppendableTokens(const Sequence &seq) const {
  const int64_t held = static_cast<int64_t>(seq.block_table.size());
  return std::max<int64_t>(0, (held + NumFreeBlocks()) * block_size_ - seq.num_computed_tokens);
}

Status BlockManager::Append(Sequence &seq, int64_t n) {
  const int64_t need =
      BlocksFor(seq.num_computed_tokens + n) - static_cast<int64_t>(seq.block_table.size());
  if (need > NumFreeBlocks())
    return Status(StatusCode::kResourceExhausted,
                  "sequence " + std::to_string(seq.id) + " needs " + std::to_string(need) +
                      " more KV blocks, " + std::to_string(NumFreeBlocks()) + " are free");
  for (int64_t i = 0; i < need; ++i)
    seq.block_table.push_back(Allocate());
  return Status::Ok();
}

int64_t BlockManager::Match(Sequence &seq) {
  if (!prefix_caching_ || !seq.block_table.empty())
    return 0;
  // Full blocks before the last token: that token must be computed.
  const int64_t candidates = (seq.NumTokens() - 1) / block_size_;
  uint64_t parent = kRootHash;
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < candidates; ++i) {
    TokensOfBlock(seq, i, &tokens);
    const uint64_t h = ChainHash(parent, tokens);
    auto it = cached_.find(h);
    if (it == cached_.end() || !IsCachedAs(it->second, parent, tokens))
      break;
    Block &b = blocks_[it->second];
    if (b.in_evictable) {
      evictable_.erase(b.evictable_it);
      b.in_evictable = false;
    }
    ++b.ref_count;
    seq.block_table.push_back(it->second);
    parent = h;
  }
  seq.num_hashed_blocks = static_cast<int64_t>(seq.block_table.size());
  seq.chain_hash = parent;
  seq.num_computed_tokens = seq.num_hashed_blocks * block_size_;
  return seq.num_computed_tokens;
}

void BlockManager::CacheFullBlocks(Sequence &seq) {
  if (!prefix_caching_)
    return;
  const int64_t full = std::min<int64_t>(seq.num_computed_tokens / block_size_,
                                         static_cast<int64_t>(seq.block_table.size()));
  for (int64_t i = seq.num_hashed_blocks; i < full; ++i) {
    Block &b = blocks_[seq.block_table[i]];
    // The sequence keeps its chain's last hash: the block before may have
    // been released behind the window (and reused) since it was hashed.
    b.parent_hash = i == 0 ? kRootHash : seq.chain_hash;
    TokensOfBlock(seq, i, &b.tokens);
    b.hash = ChainHash(b.parent_hash, b.tokens);
    b.hashed = true;
    seq.chain_hash = b.hash;
    // When another sequence computed the same block first, its entry stays;
    // this copy still carries the hash so the chain can continue past it.
    cached_.emplace(b.hash, seq.block_table[i]);
  }
  seq.num_hashed_blocks = std::max(seq.num_hashed_blocks, full);
}

void BlockManager::ReleaseBehindWindow(Sequence &seq) {
  if (window_ <= 0)
    return;
  // Blocks wholly before the next token's first position are never read
  // again; with prefix caching only hashed ones (CacheFullBlocks ran), so
  // their chain continues.
  const int64_t first = seq.num_computed_tokens - window_ + 1;
  int64_t behind = std::min<int64_t>(first > 0 ? first / block_size_ : 0,
                                     static_cast<int64_t>(seq.block_table.size()));
  if (prefix_caching_)
    behind = std::min(behind, seq.num_hashed_blocks);
  for (int64_t i = seq.num_released_blocks; i < behind; ++i) {
    Release(seq.block_table[i]);
    seq.block_table[i] = kReleasedBlock;
  }
  seq.num_released_blocks = std::max(seq.num_released_blocks, behind);
}

void BlockManager::Free(Sequence &seq) {
  for (auto it = seq.block_table.rbegin(); it != seq.block_table.rend(); ++it)
    if (*it != kReleasedBlock)
      Release(*it);
  seq.block_table.clear();
  seq.num_computed_tokens = 0;
  seq.num_hashed_blocks = 0;
  seq.chain_hash = kRootHash;
  seq.num_released_blocks = 0;
}

int32_t BlockManager::Allocate() {
  int32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = evictable_.front();
    evictable_.pop_front();
    cached_.erase(blocks_[id].hash); // an evictable block is always its hash's entry
  }
  Block &b = blocks_[id];
  b.ref_count = 1;
  b.hashed = false;
  b.in_evictable = false;
  b.tokens.clear();
  return id;
}

void BlockManager::Release(int32_t id) {
  Block &b = blocks_[id];
  if (--b.ref_count > 0)
    return;
  auto it = b.hashed ? cached_.find(b.hash) : cached_.end();
  if (it != cached_.end() && it->second == id) {
    b.evictable_it = evictable_.insert(evictable_.end(), id);
    b.in_evictable = true;
    return;
  }
  b.hashed = false;
  b.tokens.clear();
  free_.push_back(id);
}

bool BlockManager::IsCachedAs(int32_t id, uint64_t parent_hash,
                              const std::vector<int32_t> &tokens) const {
  const Block &b = blocks_[id];
  return b.hashed && b.parent_hash == parent_hash && b.tokens == tokens;
}

void BlockManager::TokensOfBlock(const Sequence &seq, int64_t index,
                                 std::vector<int32_t> *tokens) const {
  tokens->clear();
  for (int64_t p = index * block_size_; p < (index + 1) * block_size_; ++p)
    tokens->push_back(seq.TokenAt(p));
}

} // namespace kiln::engine
