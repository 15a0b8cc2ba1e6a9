// BlockManager without prefix caching: sizing, allocation to cover tokens,
// refusal when the pool is short, and freeing.
#include "engine/block_manager.h"

#include <gtest/gtest.h>

#include <set>

namespace kiln::engine {
namespace {

std::unique_ptr<BlockManager> Make(int64_t num_blocks, int64_t block_size, bool caching = false) {
  auto bm = BlockManager::Create(num_blocks, block_size, caching);
  EXPECT_TRUE(bm.ok()) << bm.status().message();
  return bm.ok() ? std::move(*bm) : nullptr;
}

Sequence Seq(int64_t id, int64_t prompt_len) {
  Sequence s;
  s.id = id;
  s.prompt.assign(prompt_len, 7);
  s.max_new_tokens = 1;
  return s;
}

TEST(BlocksForBudget, DividesAndRefusesNothing) {
  auto n = BlocksForBudget(1000, 300);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 3);
  auto big = BlocksForBudget(int64_t{80} << 30, int64_t{2} << 20); // 80 GiB of 2 MiB blocks
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(*big, 40960);
  EXPECT_EQ(BlocksForBudget(299, 300).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BlocksForBudget(1000, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BlocksForBudget(1000, -4).status().code(), StatusCode::kInvalidArgument);
}

TEST(BlockManager, CreateRejectsBadSizes) {
  EXPECT_FALSE(BlockManager::Create(0, 16, false).ok());
  EXPECT_FALSE(BlockManager::Create(-1, 16, false).ok());
  EXPECT_FALSE(BlockManager::Create(int64_t{1} << 31, 16, false).ok());
  auto bad = BlockManager::Create(8, 0, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("block size"), std::string::npos);
}

TEST(BlockManager, AppendCoversComputedPlusNewTokens) {
  auto bm = Make(5, 4);
  Sequence s = Seq(1, 20);
  ASSERT_TRUE(bm->Append(s, 5).ok()); // 5 tokens: 2 blocks
  EXPECT_EQ(s.block_table.size(), 2u);
  EXPECT_EQ(bm->NumFreeBlocks(), 3);
  s.num_computed_tokens = 5;
  ASSERT_TRUE(bm->Append(s, 3).ok()); // 8 tokens still fit in 2
  EXPECT_EQ(s.block_table.size(), 2u);
  ASSERT_TRUE(bm->Append(s, 4).ok()); // 9 tokens: 3
  EXPECT_EQ(s.block_table.size(), 3u);
  EXPECT_EQ(bm->AppendableTokens(s), 5 * 4 - 5);
  EXPECT_TRUE(bm->CanAppend(s, 15));
  EXPECT_FALSE(bm->CanAppend(s, 16));
  Status st = bm->Append(s, 16);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.block_table.size(), 3u) << "a refused Append changes nothing";
  EXPECT_EQ(bm->NumFreeBlocks(), 2);
}

TEST(BlockManager, SequencesNeverShareBlocksWithoutCaching) {
  auto bm = Make(6, 4);
  Sequence a = Seq(1, 8), b = Seq(2, 8), c = Seq(3, 8);
  for (Sequence *s : {&a, &b, &c}) {
    ASSERT_TRUE(bm->Append(*s, 8).ok());
    s->num_computed_tokens = 8;
    bm->CacheFullBlocks(*s); // no-op without caching
  }
  std::set<int32_t> ids;
  for (Sequence *s : {&a, &b, &c})
    ids.insert(s->block_table.begin(), s->block_table.end());
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(bm->NumFreeBlocks(), 0);
  EXPECT_EQ(bm->NumCachedBlocks(), 0);
  Sequence d = Seq(4, 9);
  EXPECT_EQ(bm->Match(d), 0);
  EXPECT_FALSE(bm->CanAppend(d, 1));
}

TEST(BlockManager, FreeReturnsEveryBlockAndDropsTheKv) {
  auto bm = Make(5, 4);
  Sequence s = Seq(1, 17);
  ASSERT_TRUE(bm->Append(s, 17).ok());
  EXPECT_EQ(bm->NumFreeBlocks(), 0);
  for (int32_t b : s.block_table)
    EXPECT_EQ(bm->RefCount(b), 1);
  s.num_computed_tokens = 17;
  bm->Free(s);
  EXPECT_EQ(bm->NumFreeBlocks(), 5);
  EXPECT_TRUE(s.block_table.empty());
  EXPECT_EQ(s.num_computed_tokens, 0);
  Sequence t = Seq(2, 20);
  EXPECT_TRUE(bm->Append(t, 20).ok()) << "freed blocks are reusable";
}

// With a window of 6 over blocks of 4, a sequence that has computed c
// tokens next reads positions c - 5..c: blocks wholly before c - 5 go back
// to the pool, their entries marked, and Free skips them.
TEST(BlockManager, ReleasesBlocksBehindTheWindow) {
  auto bm = Make(8, 4);
  bm->SetWindow(6);
  Sequence s = Seq(1, 40);
  ASSERT_TRUE(bm->Append(s, 12).ok()); // 3 blocks
  s.num_computed_tokens = 9;           // next reads 4..9: block 0 is behind
  bm->ReleaseBehindWindow(s);
  EXPECT_EQ(s.block_table[0], kReleasedBlock);
  EXPECT_NE(s.block_table[1], kReleasedBlock);
  EXPECT_EQ(bm->NumFreeBlocks(), 6);
  s.num_computed_tokens = 12; // next reads 7..12: block 1 (4..7) still read
  bm->ReleaseBehindWindow(s);
  EXPECT_NE(s.block_table[1], kReleasedBlock);
  // A long generation holds about window / block_size blocks, not its length.
  for (int64_t c = 12; c < 40; ++c) {
    ASSERT_TRUE(bm->Append(s, 1).ok()) << c;
    s.num_computed_tokens = c + 1;
    bm->ReleaseBehindWindow(s);
    int64_t held = 0;
    for (int32_t b : s.block_table)
      held += b != kReleasedBlock;
    EXPECT_LE(held, 3) << c;
  }
  EXPECT_EQ(s.block_table.size(), 10u);
  bm->Free(s);
  EXPECT_EQ(bm->NumFreeBlocks(), 8);
}

// Without a window nothing is released.
TEST(BlockManager, KeepsEveryBlockWithoutAWindow) {
  auto bm = Make(8, 4);
  Sequence s = Seq(1, 40);
  ASSERT_TRUE(bm->Append(s, 32).ok());
  s.num_computed_tokens = 32;
  bm->ReleaseBehindWindow(s);
  EXPECT_EQ(bm->NumFreeBlocks(), 0);
  for (int32_t b : s.block_table)
    EXPECT_NE(b, kReleasedBlock);
}

// With prefix caching, a block released behind the window stays cached
// (evictable), so a later sequence with the same prompt still matches the
// whole chain, including the blocks past the released ones.
TEST(BlockManager, ReleasedBlocksStayInThePrefixCache) {
  auto bm = Make(16, 4, /*caching=*/true);
  bm->SetWindow(5);
  Sequence a = Seq(1, 17);
  for (int64_t i = 0; i < 17; ++i)
    a.prompt[i] = static_cast<int32_t>(100 + i);
  ASSERT_TRUE(bm->Append(a, 17).ok());
  a.num_computed_tokens = 17;
  bm->CacheFullBlocks(a);
  bm->ReleaseBehindWindow(a); // next reads 13..17: blocks 0-2 (0..11) released
  EXPECT_EQ(a.block_table[2], kReleasedBlock);
  EXPECT_NE(a.block_table[3], kReleasedBlock);
  EXPECT_EQ(bm->NumCachedBlocks(), 4);
  Sequence b = Seq(2, 17);
  b.prompt = a.prompt;
  EXPECT_EQ(bm->Match(b), 16); // all four full blocks, the chain intact
  bm->Free(b);
  bm->Free(a);
  EXPECT_EQ(bm->NumFreeBlocks(), 16);
}

} // namespace
} // namespace kiln::engine
