// The scheduler on small, hand-checked cases: request validation, limits,
// chunked prefill next to decodes, preemption order, cancel, and the
// Update contract. The Harness checks the per-step invariants throughout.
#include "engine/scheduler.h"
#include "harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace kiln::engine {
namespace {

using testing::Harness;
using testing::HarnessOptions;

std::vector<int32_t> Tokens(int64_t n, int32_t first) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

Sequence Seq(int64_t id, int64_t prompt_len, int max_new) {
  Sequence s;
  s.id = id;
  s.prompt = Tokens(prompt_len, 1);
  s.max_new_tokens = max_new;
  return s;
}

// A raw BlockManager + Scheduler pair, for driving Update by hand.
struct Raw {
  explicit Raw(SchedulerConfig config, int64_t num_blocks = 64, int64_t block_size = 4) {
    blocks = std::move(*BlockManager::Create(num_blocks, block_size, false));
    auto s = Scheduler::Create(config, *blocks);
    EXPECT_TRUE(s.ok()) << s.status().message();
    scheduler = std::move(*s);
  }
  std::unique_ptr<BlockManager> blocks;
  std::unique_ptr<Scheduler> scheduler;
};

struct Chunk {
  int64_t id, start, n;
  bool operator==(const Chunk &o) const { return id == o.id && start == o.start && n == o.n; }
};
std::ostream &operator<<(std::ostream &os, const Chunk &c) {
  return os << "{seq " << c.id << " @" << c.start << " x" << c.n << "}";
}
std::vector<Chunk> Chunks(const Step &s) {
  std::vector<Chunk> out;
  for (const ScheduledChunk &c : s.chunks)
    out.push_back({c.seq_id, c.start, c.num_tokens});
  return out;
}

TEST(Scheduler, ConfigIsValidated) {
  auto bm = BlockManager::Create(8, 4, false);
  ASSERT_TRUE(bm.ok());
  EXPECT_FALSE(Scheduler::Create({0, 1, 1}, **bm).ok());
  EXPECT_FALSE(Scheduler::Create({8, 0, 1}, **bm).ok());
  EXPECT_FALSE(Scheduler::Create({8, 1, 0}, **bm).ok());
  auto starving = Scheduler::Create({4, 8, 16}, **bm);
  ASSERT_FALSE(starving.ok());
  EXPECT_NE(starving.status().message().find("max_seqs_per_step"), std::string::npos);
  EXPECT_TRUE(Scheduler::Create({8, 8, 1}, **bm).ok());
}

TEST(Scheduler, AddRefusesBadRequests) {
  Raw r({64, 4, 3}, /*num_blocks=*/4, /*block_size=*/4); // 16 tokens in the whole pool
  Sequence empty = Seq(1, 0, 4);
  Status st = r.scheduler->Add(empty);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("empty"), std::string::npos);
  EXPECT_EQ(r.scheduler->Add(Seq(1, 4, 0)).code(), StatusCode::kInvalidArgument);
  Sequence negative = Seq(1, 4, 2);
  negative.prompt[1] = -3;
  EXPECT_EQ(r.scheduler->Add(negative).code(), StatusCode::kInvalidArgument);
  Sequence with_output = Seq(1, 4, 2);
  with_output.output = {5};
  EXPECT_EQ(r.scheduler->Add(with_output).code(), StatusCode::kInvalidArgument);

  st = r.scheduler->Add(Seq(1, 10, 7)); // 17 tokens: 5 blocks of 4 > 4
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("the cache has 4"), std::string::npos) << st.message();
  EXPECT_TRUE(r.scheduler->Add(Seq(1, 10, 6)).ok()); // 16 tokens: exactly the pool
  EXPECT_EQ(r.scheduler->Add(Seq(1, 2, 2)).code(), StatusCode::kInvalidArgument) << "id in use";

  EXPECT_TRUE(r.scheduler->Add(Seq(2, 2, 2)).ok());
  EXPECT_TRUE(r.scheduler->Add(Seq(3, 2, 2)).ok());
  st = r.scheduler->Add(Seq(4, 2, 2));
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << "max_tracked_seqs is 3";
  EXPECT_EQ(r.scheduler->NumWaiting(), 3);
}

TEST(Scheduler, TrackerFreesUpAsRequestsFinish) {
  HarnessOptions opt;
  opt.config = {8, 2, 3};
  Harness h(opt);
  for (int id = 1; id <= 3; ++id)
    ASSERT_TRUE(h.Add(id, Tokens(2, id), 1).ok());
  EXPECT_EQ(h.Add(4, Tokens(2, 4), 1).code(), StatusCode::kResourceExhausted);
  h.StepOnce(); // requests 1 and 2 generate their one token
  EXPECT_EQ(h.finished.size(), 2u);
  EXPECT_TRUE(h.Add(4, Tokens(2, 4), 1).ok());
  EXPECT_TRUE(h.Add(5, Tokens(2, 5), 1).ok());
  EXPECT_EQ(h.Add(6, Tokens(2, 6), 1).code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(h.RunToEnd(10));
}

TEST(Scheduler, EmptyOnlyWhenNothingIsLeft) {
  Raw r({16, 4, 8});
  Step s = r.scheduler->Schedule();
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.num_tokens, 0);
  EXPECT_TRUE(r.scheduler->Update(s, {}).ok());
  ASSERT_TRUE(r.scheduler->Add(Seq(1, 3, 1)).ok());
  EXPECT_FALSE(r.scheduler->Schedule().empty());
}

TEST(Scheduler, ChunkedPrefillSplitsLongPromptsBesideDecodes) {
  HarnessOptions opt;
  opt.config = {16, 4, 8};
  Harness h(opt);
  ASSERT_TRUE(h.Add(1, Tokens(3, 1), 10).ok());
  EXPECT_EQ(Chunks(h.StepOnce()), (std::vector<Chunk>{{1, 0, 3}}));
  ASSERT_TRUE(h.Add(2, Tokens(40, 100), 2).ok());
  ASSERT_TRUE(h.Add(3, Tokens(40, 200), 2).ok());
  // The decode goes first; the long prompt takes the rest of the budget and
  // the next prompt waits until the first is done.
  EXPECT_EQ(Chunks(h.StepOnce()), (std::vector<Chunk>{{1, 3, 1}, {2, 0, 15}}));
  EXPECT_EQ(Chunks(h.StepOnce()), (std::vector<Chunk>{{1, 4, 1}, {2, 15, 15}}));
  EXPECT_EQ(Chunks(h.StepOnce()), (std::vector<Chunk>{{1, 5, 1}, {2, 30, 10}, {3, 0, 5}}));
  EXPECT_EQ(Chunks(h.StepOnce()), (std::vector<Chunk>{{1, 6, 1}, {2, 40, 1}, {3, 5, 14}}));
  EXPECT_EQ(h.finished.count(2), 1u) << "request 2 reached its 2 tokens";
  EXPECT_EQ(Chunks(h.StepOnce()), (std::vector<Chunk>{{1, 7, 1}, {3, 19, 15}}));
  EXPECT_EQ(Chunks(h.StepOnce()), (std::vector<Chunk>{{1, 8, 1}, {3, 34, 6}}));
  ASSERT_TRUE(h.RunToEnd(100));
  for (int64_t id : {1, 2, 3}) {
    EXPECT_EQ(h.finished.at(id).output, h.Reference(id)) << "request " << id;
    EXPECT_EQ(h.finished.at(id).finish_reason, FinishReason::kLength);
  }
}

TEST(Scheduler, EveryStepFillsTheBudgetWhenMemoryAllows) {
  HarnessOptions opt;
  opt.config = {64, 32, 64};
  Harness h(opt);
  std::vector<int64_t> ids;
  for (int id = 1; id <= 20; ++id) {
    ASSERT_TRUE(h.Add(id, Tokens(3 + (id * 37) % 50, id), 1 + (id * 11) % 13).ok());
    ids.push_back(id);
  }
  int full_steps = 0;
  while (h.scheduler().HasUnfinished()) {
    int64_t left = 0;
    for (int64_t id : ids)
      if (const Sequence *s = h.scheduler().Find(id); s && !s->finished())
        left += s->NumUncomputed();
    const Step s = h.StepOnce();
    ASSERT_EQ(s.num_tokens, std::min<int64_t>(64, left)) << "step " << s.id;
    full_steps += s.num_tokens == 64;
    ASSERT_LT(h.steps.size(), 1000u);
  }
  EXPECT_GT(full_steps, 5);
  for (int64_t id : ids)
    EXPECT_EQ(h.finished.at(id).output, h.Reference(id));
}

TEST(Scheduler, MaxSeqsPerStepBoundsTheRunningSet) {
  HarnessOptions opt;
  opt.config = {8, 2, 16};
  Harness h(opt);
  for (int id = 1; id <= 5; ++id)
    ASSERT_TRUE(h.Add(id, Tokens(5, id * 10), 4).ok());
  bool bound = false;
  while (h.scheduler().HasUnfinished() && h.steps.size() < 100) {
    const Step s = h.StepOnce(); // the Harness checks chunks <= 2 and running <= 2
    bound |= s.chunks.size() == 2 && h.scheduler().NumWaiting() > 0;
  }
  EXPECT_TRUE(bound) << "the limit never mattered; the test is too weak";
  ASSERT_TRUE(h.RunToEnd(1));
  for (int64_t id = 1; id <= 5; ++id)
    EXPECT_EQ(h.finished.at(id).output, h.Reference(id));
}

TEST(Scheduler, PreemptsTheLastAdmittedFirstAndRequeuesItAtTheFront) {
  HarnessOptions opt;
  opt.config = {64, 4, 16};
  opt.num_blocks = 6; // 24 token slots for 4 sequences that each grow to 11
  opt.block_size = 4;
  Harness h(opt);
  for (int id = 1; id <= 4; ++id)
    ASSERT_TRUE(h.Add(id, Tokens(4, id * 10), 8).ok());
  ASSERT_TRUE(h.Add(5, Tokens(4, 50), 2).ok());
  Step s1 = h.StepOnce();
  EXPECT_EQ(s1.chunks.size(), 4u) << "request 5 waits: max_seqs_per_step is 4";
  Step s2 = h.StepOnce();
  EXPECT_EQ(s2.preempted, (std::vector<int64_t>{4}));
  EXPECT_EQ(Chunks(s2), (std::vector<Chunk>{{1, 4, 1}, {2, 4, 1}, {3, 4, 1}}));
  const Sequence *d = h.scheduler().Find(4);
  EXPECT_EQ(d->status, SequenceStatus::kWaiting);
  EXPECT_EQ(d->num_computed_tokens, 0);
  EXPECT_TRUE(d->block_table.empty());
  EXPECT_EQ(d->output.size(), 1u) << "generated tokens survive preemption";
  EXPECT_EQ(d->num_preemptions, 1);

  ASSERT_TRUE(h.RunToEnd(200));
  // When 1 and 2 cross into their third block, the youngest left (3) goes
  // too, in front of 4. Once 1 and 2 finish, all return in arrival order,
  // request 5 (waiting since the start) last.
  std::vector<int64_t> preempted, admitted;
  for (size_t i = 1; i < h.steps.size(); ++i) {
    preempted.insert(preempted.end(), h.steps[i].preempted.begin(), h.steps[i].preempted.end());
    for (const ScheduledChunk &c : h.steps[i].chunks)
      if (c.start == 0)
        admitted.push_back(c.seq_id);
  }
  EXPECT_EQ(preempted, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(admitted, (std::vector<int64_t>{3, 4, 5}));
  for (int64_t id = 1; id <= 5; ++id)
    EXPECT_EQ(h.finished.at(id).output, h.Reference(id)) << "request " << id;
}

TEST(Scheduler, APromptChunkShrinksToTheFreeBlocksInsteadOfPreempting) {
  HarnessOptions opt;
  opt.config = {8, 2, 8};
  opt.num_blocks = 5;
  opt.block_size = 4;
  Harness h(opt);
  ASSERT_TRUE(h.Add(1, Tokens(9, 1), 3).ok());
  EXPECT_EQ(Chunks(h.StepOnce()), (std::vector<Chunk>{{1, 0, 8}}));
  ASSERT_TRUE(h.Add(2, Tokens(11, 30), 1).ok());
  EXPECT_EQ(Chunks(h.StepOnce()), (std::vector<Chunk>{{1, 8, 1}, {2, 0, 7}}));
  EXPECT_EQ(h.blocks().NumFreeBlocks(), 0);
  // Request 2 wants 4 more tokens; one fits in the slack of its last block.
  Step s = h.StepOnce();
  EXPECT_EQ(Chunks(s), (std::vector<Chunk>{{1, 9, 1}, {2, 7, 1}}));
  EXPECT_TRUE(s.preempted.empty());
  ASSERT_TRUE(h.RunToEnd(20));
  EXPECT_EQ(h.num_preemptions, 0);
  for (int64_t id : {1, 2})
    EXPECT_EQ(h.finished.at(id).output, h.Reference(id));
}

TEST(Scheduler, AStepThatPreemptsAdmitsNothing) {
  // The victim frees more blocks than the decode that preempts it needs,
  // and the budget left would take its first chunk again; readmitting it
  // there would only throw that chunk away at the next shortage.
  HarnessOptions opt;
  opt.config = {4, 2, 8};
  opt.num_blocks = 10;
  opt.block_size = 4;
  Harness h(opt);
  ASSERT_TRUE(h.Add(1, Tokens(1, 1), 30).ok());
  h.StepOnce();
  ASSERT_TRUE(h.Add(2, Tokens(24, 100), 12).ok());
  ASSERT_TRUE(h.RunToEnd(200)); // the Harness fails any step that preempts and admits
  EXPECT_GE(h.num_preemptions, 1);
  for (int64_t id : {1, 2})
    EXPECT_EQ(h.finished.at(id).output, h.Reference(id));
}

TEST(Scheduler, CancelFreesBlocksAndDropsPendingChunks) {
  Raw r({64, 4, 8}, /*num_blocks=*/16);
  ASSERT_TRUE(r.scheduler->Add(Seq(1, 9, 5)).ok());
  ASSERT_TRUE(r.scheduler->Add(Seq(2, 5, 5)).ok());
  Step s = r.scheduler->Schedule();
  ASSERT_EQ(s.chunks.size(), 2u);
  EXPECT_EQ(r.blocks->NumFreeBlocks(), 16 - 3 - 2);
  ASSERT_TRUE(r.scheduler->Cancel(1).ok());
  EXPECT_EQ(r.blocks->NumFreeBlocks(), 16 - 2);
  EXPECT_EQ(r.scheduler->Find(1)->finish_reason, FinishReason::kCancelled);
  EXPECT_TRUE(r.scheduler->Cancel(1).ok()) << "cancelling twice is harmless";
  EXPECT_EQ(r.scheduler->Cancel(99).code(), StatusCode::kNotFound);
  EXPECT_EQ(r.scheduler->Finish(2, FinishReason::kNone).code(), StatusCode::kInvalidArgument);
  // The model ran both chunks; request 1's token is dropped.
  ASSERT_TRUE(r.scheduler->Update(s, {7, 8}).ok());
  EXPECT_EQ(r.scheduler->Find(1)->output.size(), 0u);
  EXPECT_EQ(r.scheduler->Find(2)->output, (std::vector<int32_t>{8}));

  ASSERT_TRUE(r.scheduler->Add(Seq(3, 4, 5)).ok());
  EXPECT_EQ(r.scheduler->NumWaiting(), 1);
  ASSERT_TRUE(r.scheduler->Cancel(3).ok());
  EXPECT_EQ(r.scheduler->NumWaiting(), 0);
  ASSERT_TRUE(r.scheduler->Cancel(2).ok());
  EXPECT_EQ(r.blocks->NumFreeBlocks(), 16);
  EXPECT_FALSE(r.scheduler->HasUnfinished());
  std::vector<Sequence> done = r.scheduler->TakeFinished();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].id, 1);
  EXPECT_EQ(done[2].id, 2);
  EXPECT_EQ(r.scheduler->Find(1), nullptr);
  EXPECT_TRUE(r.scheduler->Add(Seq(1, 4, 1)).ok()) << "a taken id is free again";
}

TEST(Scheduler, UpdateRefusesOtherStepsAndWrongTokenCounts) {
  Raw r({16, 4, 8});
  ASSERT_TRUE(r.scheduler->Add(Seq(1, 6, 3)).ok());
  Step s = r.scheduler->Schedule();
  ASSERT_EQ(s.NumSampling(), 1);
  EXPECT_EQ(r.scheduler->Update(s, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.scheduler->Update(s, {1, 2}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.scheduler->Update(s, {-1}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.scheduler->Find(1)->num_computed_tokens, 0) << "a refused update changes nothing";
  ASSERT_TRUE(r.scheduler->Update(s, {5}).ok());
  EXPECT_EQ(r.scheduler->Update(s, {5}).code(), StatusCode::kInvalidArgument) << "twice";
  EXPECT_EQ(r.scheduler->Find(1)->num_computed_tokens, 6);

  // A step never updated is dropped and its tokens come again.
  Step dropped = r.scheduler->Schedule();
  Step again = r.scheduler->Schedule();
  EXPECT_EQ(Chunks(dropped), Chunks(again));
  EXPECT_EQ(r.scheduler->Update(dropped, {6}).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(r.scheduler->Update(again, {6}).ok());
  EXPECT_EQ(r.scheduler->Find(1)->output, (std::vector<int32_t>{5, 6}));
}

TEST(Scheduler, FinishesAtLengthOrWhenTheCallerSeesEos) {
  HarnessOptions opt;
  opt.config = {16, 4, 8};
  Harness plain(opt);
  ASSERT_TRUE(plain.Add(1, Tokens(5, 3), 6).ok());
  ASSERT_TRUE(plain.RunToEnd(20));
  const std::vector<int32_t> ref = plain.finished.at(1).output;
  ASSERT_EQ(ref.size(), 6u);
  EXPECT_EQ(plain.finished.at(1).finish_reason, FinishReason::kLength);

  opt.eos = ref[3];
  const size_t stop = std::find(ref.begin(), ref.end(), opt.eos) - ref.begin();
  Harness with_eos(opt);
  ASSERT_TRUE(with_eos.Add(1, Tokens(5, 3), 6).ok());
  ASSERT_TRUE(with_eos.RunToEnd(20));
  EXPECT_EQ(with_eos.finished.at(1).output,
            std::vector<int32_t>(ref.begin(), ref.begin() + stop + 1));
  EXPECT_EQ(with_eos.finished.at(1).finish_reason, FinishReason::kEos);
}

// Behind a sliding window of 6 (blocks of 4), requests of 50 tokens each
// run in a pool of 12 blocks (48 tokens), several at once: each holds about
// its window's blocks, released ones go to the others, and every request
// generates what it would alone (the fake model checks every position in
// a window against the sequence's own KV). Without the window the same
// request is refused.
TEST(Scheduler, SlidingWindowRunsRequestsLongerThanThePool) {
  HarnessOptions opt;
  opt.config = {8, 4, 16};
  opt.num_blocks = 12;
  Harness h(opt);
  EXPECT_EQ(h.Add(1, Tokens(20, 1), 30).code(), StatusCode::kInvalidArgument);
  h.blocks().SetWindow(6);
  for (int id = 1; id <= 3; ++id)
    ASSERT_TRUE(h.Add(id, Tokens(20, id), 30).ok());
  ASSERT_TRUE(h.RunToEnd(400));
  for (int64_t id = 1; id <= 3; ++id)
    EXPECT_EQ(h.finished.at(id).output, h.Reference(id)) << id;
  EXPECT_EQ(h.blocks().NumFreeBlocks(), 12);
}

} // namespace
} // namespace kiln::engine
