// Prefix caching: the hash chain over full blocks, reference counts, LRU
// eviction of cached blocks, and the scheduler reusing a shared prefix.
#include "engine/block_manager.h"
#include "harness.h"

#include <gtest/gtest.h>

#include <numeric>

namespace kiln::engine {
namespace {

std::unique_ptr<BlockManager> Make(int64_t num_blocks, int64_t block_size) {
  auto bm = BlockManager::Create(num_blocks, block_size, /*prefix_caching=*/true);
  EXPECT_TRUE(bm.ok()) << bm.status().message();
  return bm.ok() ? std::move(*bm) : nullptr;
}

Sequence Seq(int64_t id, std::vector<int32_t> tokens) {
  Sequence s;
  s.id = id;
  s.prompt = std::move(tokens);
  s.max_new_tokens = 1;
  return s;
}

std::vector<int32_t> Range(int32_t first, int32_t last) { // [first, last]
  std::vector<int32_t> v(last - first + 1);
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Matches what it can, then computes (allocates and registers) the rest.
void Prefill(BlockManager &bm, Sequence &s) {
  bm.Match(s);
  ASSERT_TRUE(bm.Append(s, s.NumUncomputed()).ok());
  s.num_computed_tokens = s.NumTokens();
  bm.CacheFullBlocks(s);
}

TEST(PrefixCache, MatchSharesTheFullBlocksOfAChain) {
  auto bm = Make(16, 4);
  Sequence a = Seq(1, Range(1, 9));
  Prefill(*bm, a);
  EXPECT_EQ(bm->NumCachedBlocks(), 2) << "the partial third block is not cached";
  Sequence b = Seq(2, Concat(Range(1, 8), {100, 101}));
  EXPECT_EQ(bm->Match(b), 8);
  EXPECT_EQ(b.num_computed_tokens, 8);
  ASSERT_EQ(b.block_table.size(), 2u);
  EXPECT_EQ(b.block_table[0], a.block_table[0]);
  EXPECT_EQ(b.block_table[1], a.block_table[1]);
  EXPECT_EQ(bm->RefCount(a.block_table[0]), 2);
  EXPECT_EQ(bm->RefCount(a.block_table[2]), 1);
}

TEST(PrefixCache, SameTokensAfterADifferentPrefixDoNotHit) {
  auto bm = Make(16, 4);
  Sequence a = Seq(1, Range(1, 9));
  Prefill(*bm, a);
  // Block 1 holds 5..8 like a's, but after another first block.
  Sequence c = Seq(2, Concat(Range(50, 53), Range(5, 9)));
  EXPECT_EQ(bm->Match(c), 0);
  EXPECT_TRUE(c.block_table.empty());
  // Same first block, different second: only the first hits.
  Sequence d = Seq(3, Concat(Range(1, 4), Range(50, 54)));
  EXPECT_EQ(bm->Match(d), 4);
  // The same tokens one position later share nothing either.
  Sequence e = Seq(4, Concat({0}, Range(1, 9)));
  EXPECT_EQ(bm->Match(e), 0);
  // A hit on block 0 does not make block 1 hit another chain's block 1.
  Sequence f = Seq(5, Concat(Range(11, 14), Range(21, 25)));
  Prefill(*bm, f);
  Sequence g = Seq(6, Concat(Range(1, 4), Range(21, 25)));
  EXPECT_EQ(bm->Match(g), 4);
  ASSERT_EQ(g.block_table.size(), 1u);
  EXPECT_EQ(g.block_table[0], a.block_table[0]);
}

TEST(PrefixCache, PartialBlocksAreNeverCached) {
  auto bm = Make(16, 4);
  Sequence a = Seq(1, Range(1, 6));
  Prefill(*bm, a);
  EXPECT_EQ(bm->NumCachedBlocks(), 1);
  Sequence b = Seq(2, Range(1, 7));
  EXPECT_EQ(bm->Match(b), 4);
}

TEST(PrefixCache, TheLastTokenIsAlwaysLeftToCompute) {
  auto bm = Make(16, 4);
  Sequence a = Seq(1, Range(1, 9));
  Prefill(*bm, a);
  Sequence exact = Seq(2, Range(1, 8)); // two full cached blocks, nothing after
  EXPECT_EQ(bm->Match(exact), 4);
  EXPECT_EQ(exact.NumUncomputed(), 4);
  Sequence one = Seq(3, Range(1, 5));
  EXPECT_EQ(bm->Match(one), 4);
  EXPECT_EQ(one.NumUncomputed(), 1);
}

TEST(PrefixCache, GeneratedTokensExtendTheChain) {
  auto bm = Make(16, 4);
  Sequence a = Seq(1, Range(1, 6));
  Prefill(*bm, a);
  EXPECT_EQ(bm->NumCachedBlocks(), 1);
  a.output = {7, 8, 9}; // decoded: 7 and 8 computed, 9 just sampled
  ASSERT_TRUE(bm->Append(a, 2).ok());
  a.num_computed_tokens = 8;
  bm->CacheFullBlocks(a);
  EXPECT_EQ(bm->NumCachedBlocks(), 2);
  Sequence b = Seq(2, Range(1, 10));
  EXPECT_EQ(bm->Match(b), 8);
}

TEST(PrefixCache, ASharedBlockIsFreedOnlyAfterBothHolders) {
  auto bm = Make(8, 4);
  Sequence a = Seq(1, Range(1, 9));
  Prefill(*bm, a); // blocks: 2 full + 1 partial
  Sequence b = Seq(2, Concat(Range(1, 8), {60, 61}));
  Prefill(*bm, b); // shares 2, adds 1
  EXPECT_EQ(bm->NumFreeBlocks(), 8 - 4);
  const int32_t shared = a.block_table[0];
  bm->Free(a);
  EXPECT_EQ(bm->RefCount(shared), 1);
  EXPECT_EQ(bm->NumFreeBlocks(), 8 - 3) << "only a's own block came back";
  bm->Free(b);
  EXPECT_EQ(bm->RefCount(shared), 0);
  EXPECT_EQ(bm->NumFreeBlocks(), 8);
  // Free but still cached: a third sequence gets the same blocks back.
  Sequence c = Seq(3, Concat(Range(1, 8), {70}));
  EXPECT_EQ(bm->Match(c), 8);
  EXPECT_EQ(c.block_table[0], shared);
  EXPECT_EQ(bm->NumFreeBlocks(), 8 - 2) << "matched blocks leave the free list";
}

TEST(PrefixCache, EvictsTheLeastRecentlyFreedCachedBlock) {
  auto bm = Make(4, 4);
  Sequence a = Seq(1, Range(1, 5)), b = Seq(2, Range(11, 15));
  Prefill(*bm, a);
  Prefill(*bm, b);
  EXPECT_EQ(bm->NumFreeBlocks(), 0);
  bm->Free(a); // a's full block is now the least recently freed
  bm->Free(b);
  EXPECT_EQ(bm->NumFreeBlocks(), 4);
  Sequence c = Seq(3, Range(30, 38));
  ASSERT_TRUE(bm->Append(c, 9).ok()); // 3 blocks: the 2 uncached ones, then one eviction
  EXPECT_EQ(bm->NumCachedBlocks(), 1);
  Sequence a2 = Seq(4, Range(1, 6)), b2 = Seq(5, Range(11, 16));
  EXPECT_EQ(bm->Match(a2), 0) << "a's block was evicted first";
  EXPECT_EQ(bm->Match(b2), 4) << "b's block survives";
}

TEST(PrefixCache, ASequencesTailIsEvictedBeforeItsHead) {
  auto bm = Make(4, 2);
  Sequence a = Seq(1, Range(1, 5)); // [1 2][3 4][5]: two cached blocks
  Prefill(*bm, a);
  bm->Free(a);
  Sequence x = Seq(2, Range(40, 45));
  ASSERT_TRUE(bm->Append(x, 5).ok()); // 3 blocks: 2 unused, then one eviction
  Sequence a2 = Seq(3, Range(1, 5));
  EXPECT_EQ(bm->Match(a2), 2) << "the head block [1 2] outlived the tail [3 4]";
}

TEST(PrefixCache, ADuplicateBlockKeepsTheChainGoing) {
  auto bm = Make(16, 4);
  // Both compute the same two blocks before either is registered.
  Sequence a = Seq(1, Range(1, 9)), b = Seq(2, Range(1, 13));
  ASSERT_TRUE(bm->Append(a, 9).ok());
  ASSERT_TRUE(bm->Append(b, 13).ok());
  a.num_computed_tokens = 9;
  b.num_computed_tokens = 13;
  bm->CacheFullBlocks(a);
  bm->CacheFullBlocks(b);
  EXPECT_EQ(bm->NumCachedBlocks(), 3) << "a's two blocks, then b's third";
  Sequence c = Seq(3, Concat(Range(1, 12), {99}));
  EXPECT_EQ(bm->Match(c), 12);
  EXPECT_EQ(c.block_table[0], a.block_table[0]);
  EXPECT_EQ(c.block_table[2], b.block_table[2]);
  bm->Free(a);
  bm->Free(b);
  bm->Free(c);
  EXPECT_EQ(bm->NumFreeBlocks(), 16);
}

TEST(PrefixCache, WithoutCachingNothingMatches) {
  auto made = BlockManager::Create(8, 4, false);
  ASSERT_TRUE(made.ok());
  BlockManager &bm = **made;
  Sequence a = Seq(1, Range(1, 9));
  Prefill(bm, a);
  Sequence b = Seq(2, Range(1, 9));
  EXPECT_EQ(bm.Match(b), 0);
}

// The scheduler side: a second request reuses the first one's full blocks
// and still generates exactly what it would alone.
TEST(PrefixCache, SchedulerReusesASharedPrefix) {
  using testing::Harness;
  using testing::HarnessOptions;
  HarnessOptions opt;
  opt.config = {16, 4, 8};
  opt.prefix_caching = true;
  const std::vector<int32_t> shared = Range(1, 10); // 2 full blocks + 2 tokens
  Harness h(opt);
  ASSERT_TRUE(h.Add(1, Concat(shared, {40, 41}), 3).ok());
  ASSERT_TRUE(h.RunToEnd(100));
  ASSERT_TRUE(h.Add(2, Concat(shared, {50, 51, 52}), 3).ok());
  Step first = h.StepOnce();
  ASSERT_EQ(first.chunks.size(), 1u);
  EXPECT_EQ(first.chunks[0].start, 8) << "the 2 shared full blocks are not recomputed";
  EXPECT_EQ(first.chunks[0].num_tokens, 5);
  ASSERT_TRUE(h.RunToEnd(100));
  EXPECT_EQ(h.finished.at(2).output, h.Reference(2));

  // The same request alone, without caching, generates the same tokens.
  opt.prefix_caching = false;
  Harness alone(opt);
  ASSERT_TRUE(alone.Add(2, Concat(shared, {50, 51, 52}), 3).ok());
  ASSERT_TRUE(alone.RunToEnd(100));
  EXPECT_EQ(alone.steps[0].chunks[0].start, 0);
  EXPECT_EQ(alone.finished.at(2).output, h.finished.at(2).output);
}

TEST(PrefixCache, SchedulerSharesBlocksWithARunningSequence) {
  using testing::Harness;
  using testing::HarnessOptions;
  HarnessOptions opt;
  opt.config = {64, 4, 8};
  opt.prefix_caching = true;
  const std::vector<int32_t> shared = Range(1, 12);
  Harness h(opt);
  ASSERT_TRUE(h.Add(1, Concat(shared, {40}), 20).ok());
  h.StepOnce(); // a's prompt
  ASSERT_TRUE(h.Add(2, Concat(shared, {50, 51}), 20).ok());
  Step s = h.StepOnce();
  ASSERT_EQ(s.chunks.size(), 2u);
  EXPECT_EQ(s.chunks[1].seq_id, 2);
  EXPECT_EQ(s.chunks[1].start, 12);
  const Sequence *a = h.scheduler().Find(1);
  EXPECT_EQ(h.blocks().RefCount(a->block_table[0]), 2);
  ASSERT_TRUE(h.RunToEnd(100));
  EXPECT_EQ(h.finished.at(1).output, h.Reference(1));
  EXPECT_EQ(h.finished.at(2).output, h.Reference(2));
}

} // namespace
} // namespace kiln::engine
