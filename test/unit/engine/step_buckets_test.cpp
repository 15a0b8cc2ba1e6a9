// Decode step buckets and padding (engine/step_buckets.h).
#include "core/paged_indices.h"
#include "engine/step_buckets.h"

#include <gtest/gtest.h>

namespace kiln::engine {
namespace {

TEST(StepBuckets, DecodeBucketIsThePowerOfTwoAtOrAboveWithinTheCap) {
  EXPECT_EQ(DecodeBucket(1, 0), 1);
  EXPECT_EQ(DecodeBucket(2, 0), 2);
  EXPECT_EQ(DecodeBucket(3, 0), 4);
  EXPECT_EQ(DecodeBucket(5, 0), 8);
  EXPECT_EQ(DecodeBucket(17, 0), 32);
  EXPECT_EQ(DecodeBucket(64, 0), 64);
  // Capped at the largest batch, never below the step itself.
  EXPECT_EQ(DecodeBucket(40, 48), 48);
  EXPECT_EQ(DecodeBucket(33, 64), 64);
  EXPECT_EQ(DecodeBucket(48, 48), 48);
  EXPECT_EQ(DecodeBucket(50, 48), 50);
  EXPECT_EQ(TableBucket(1), 1);
  EXPECT_EQ(TableBucket(3), 4);
  EXPECT_EQ(TableBucket(9), 16);
}

TEST(StepBuckets, IsDecodeOnly) {
  Sequence a, b;
  Step step;
  EXPECT_FALSE(IsDecodeOnly(step));
  step.chunks = {ScheduledChunk{&a, 1, 4, 1, true}, ScheduledChunk{&b, 2, 7, 1, true}};
  EXPECT_TRUE(IsDecodeOnly(step));
  step.chunks[1].num_tokens = 3; // a prompt chunk
  EXPECT_FALSE(IsDecodeOnly(step));
  step.chunks[1].num_tokens = 1;
  step.chunks[1].samples = false;
  EXPECT_FALSE(IsDecodeOnly(step));
}

// Three sequences decoding at positions 4, 1 and 6 over blocks of 4 tokens.
StepArrays ThreeDecodes() {
  StepArrays a;
  a.ids = {11, 12, 13};
  a.pos = {4, 1, 6};
  a.slots = {2 * 4 + 0, 3 * 4 + 1, 5 * 4 + 2};
  a.qstart = {0, 1, 2, 3};
  a.ctx = {5, 2, 7};
  a.width = 2;
  a.tables = {1, 2, 3, 0, 4, 5};
  a.rows = {0, 1, 2};
  return a;
}

TEST(StepBuckets, PaddingKeepsTheRealSequencesAndAddsInertOnes) {
  StepArrays a = ThreeDecodes();
  ASSERT_TRUE(PadDecodeStep(a, 4, 4));
  EXPECT_EQ(a.seqs(), 4);
  EXPECT_EQ(a.width, 4);
  EXPECT_EQ(a.ids, (std::vector<int64_t>{11, 12, 13, 0}));
  EXPECT_EQ(a.pos, (std::vector<int64_t>{4, 1, 6, 0}));
  EXPECT_EQ(a.slots, (std::vector<int64_t>{8, 13, 22, -1})); // the pad stores nothing
  EXPECT_EQ(a.qstart, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(a.ctx, (std::vector<int64_t>{5, 2, 7, 1}));
  EXPECT_EQ(a.tables, (std::vector<int64_t>{1, 2, 0, 0, 3, 0, 0, 0, 4, 5, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(a.rows, (std::vector<int64_t>{0, 1, 2, 3}));
  // What the runner checks before any kernel reads them.
  const PagedIndices p{a.slots.data(), a.qstart.data(), a.ctx.data(), a.tables.data(), 4, 4,
                       a.width};
  Status st = CheckPagedIndices(p, /*num_blocks=*/6, /*block_size=*/4);
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(StepBuckets, PaddingToTheSameShapeChangesNothing) {
  StepArrays a = ThreeDecodes();
  ASSERT_TRUE(PadDecodeStep(a, 3, 2));
  const StepArrays b = ThreeDecodes();
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.slots, b.slots);
  EXPECT_EQ(a.tables, b.tables);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.width, 2);
}

TEST(StepBuckets, RefusesWhatIsNotADecodeStepOrShrinks) {
  StepArrays a = ThreeDecodes();
  EXPECT_FALSE(PadDecodeStep(a, 2, 2)); // fewer sequences
  EXPECT_FALSE(PadDecodeStep(a, 4, 1)); // a narrower table
  StepArrays prompt = ThreeDecodes();
  prompt.qstart = {0, 1, 2, 4}; // the last sequence has two tokens
  prompt.ids.push_back(14);
  prompt.pos.push_back(7);
  prompt.slots.push_back(23);
  EXPECT_FALSE(PadDecodeStep(prompt, 4, 2));
  StepArrays unsampled = ThreeDecodes();
  unsampled.rows = {0, 2};
  EXPECT_FALSE(PadDecodeStep(unsampled, 4, 2));
  // Refusing changed nothing.
  EXPECT_EQ(a.ids, ThreeDecodes().ids);
  EXPECT_EQ(a.width, 2);
}

} // namespace
} // namespace kiln::engine
