// PlanModelRunner on the CUDA backend, on real ragged plans: the KV cache
// in device memory, index arrays checked on the host and uploaded, and only
// the sampled rows' logits read back, within 1e-4 of the CPU's (fp32
// plans). Skips, saying why, where no CUDA device is visible.
#include "backends/cuda/cuda_backend.h"
#include "backends/registry.h"
#include "runner_steps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace kiln {
namespace {

using engine::PlanModelRunner;
using engine::ScheduledChunk;
using engine::Sequence;
using engine::Step;
using test::kBlocks;
using test::kBlockSize;
using test::LoadNamed;
using test::PrefillThenDecode;

// Largest |got - want| over the largest |want|.
double RelativeError(const std::vector<float> &got, const std::vector<float> &want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// Two sequences in one step: one decodes (and samples), the other runs the
// middle of its prompt (and does not), so one row of two comes back.
std::vector<float> MixedStep(PlanModelRunner &runner) {
  Sequence a, b;
  a.id = 1;
  a.prompt = {3, 1, 4, 1, 5};
  a.block_table = {6, 1};
  b.id = 2;
  b.prompt = {2, 7, 1, 8, 2, 8, 1, 8};
  b.block_table = {4, 0, 3};
  std::vector<float> logits, all;
  Step prefill;
  prefill.chunks.push_back(ScheduledChunk{&a, a.id, 0, 5, true});
  prefill.chunks.push_back(ScheduledChunk{&b, b.id, 0, 3, false});
  prefill.num_tokens = 8;
  Status st = runner.Run(prefill, logits);
  EXPECT_TRUE(st.ok()) << st.message();
  all = logits;
  a.output = {9};
  Step mixed;
  mixed.chunks.push_back(ScheduledChunk{&a, a.id, 5, 1, true});
  mixed.chunks.push_back(ScheduledChunk{&b, b.id, 3, 4, false});
  mixed.num_tokens = 5;
  st = runner.Run(mixed, logits);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(logits.size(), static_cast<size_t>(runner.vocab_size()));
  all.insert(all.end(), logits.begin(), logits.end());
  return all;
}

class RunnerOnCuda : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (cuda::CudaDeviceCount() == 0)
      GTEST_SKIP() << "no CUDA device visible (the GPU tests run with `make test-gpu`)";
  }
};

TEST_P(RunnerOnCuda, MatchesTheCpu) {
  auto plan = LoadNamed(GetParam());
  ASSERT_TRUE(plan);
  auto cpu = CreateBackend("cpu");
  auto gpu = CreateBackend("cuda");
  ASSERT_TRUE(cpu.ok());
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  auto on_cpu = PlanModelRunner::Create(*plan, **cpu, kBlocks, kBlockSize);
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status().message();
  auto on_gpu = PlanModelRunner::Create(*plan, **gpu, kBlocks, kBlockSize);
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.status().message();

  std::vector<float> want = PrefillThenDecode(**on_cpu);
  std::vector<float> got = PrefillThenDecode(**on_gpu);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LE(RelativeError(got, want), 1e-4);

  std::vector<float> mixed_want = MixedStep(**on_cpu);
  std::vector<float> mixed_got = MixedStep(**on_gpu);
  ASSERT_EQ(mixed_got.size(), mixed_want.size());
  EXPECT_LE(RelativeError(mixed_got, mixed_want), 1e-4);
}

// --gpu-memory-utilization: a cache of a fraction of free memory, much
// larger than the fixed one, gives the same logits.
TEST_P(RunnerOnCuda, CacheSizedByAFractionOfFreeMemory) {
  auto plan = LoadNamed(GetParam());
  ASSERT_TRUE(plan);
  auto gpu = CreateBackend("cuda");
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  auto fixed = PlanModelRunner::Create(*plan, **gpu, kBlocks, kBlockSize);
  ASSERT_TRUE(fixed.ok()) << fixed.status().message();
  std::vector<float> want = PrefillThenDecode(**fixed);
  fixed->reset();

  PlanModelRunner::StepLimits limits;
  limits.max_tokens = 256;
  limits.max_seqs = 16;
  limits.max_context = 512;
  auto before = (*gpu)->MemoryInfo();
  ASSERT_TRUE(before.ok()) << before.status().message();
  auto sized = PlanModelRunner::CreateForMemoryFraction(*plan, **gpu, 0.05, kBlockSize, limits);
  ASSERT_TRUE(sized.ok()) << sized.status().message();
  auto per_block = PlanModelRunner::BytesPerBlock(*plan, kBlockSize);
  ASSERT_TRUE(per_block.ok());
  const double cache = static_cast<double>((*sized)->num_blocks() * *per_block);
  EXPECT_GT((*sized)->num_blocks(), kBlocks);
  EXPECT_LE(cache, 0.05 * static_cast<double>(before->free_bytes));
  EXPECT_GE(cache, 0.04 * static_cast<double>(before->free_bytes));
  std::vector<float> got = PrefillThenDecode(**sized);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LE(RelativeError(got, want), 1e-6);
}

// CUDA graphs: decode steps captured per bucket and replayed give exactly
// the logits (so the greedy tokens) of the same padded steps run eagerly,
// for batches on and between the buckets; whatever KILN_CUDA_GRAPHS says.
// Against unpadded eager steps and the CPU, within rounding.
TEST_P(RunnerOnCuda, DecodeGraphsOnAndOffAgreeExactly) {
  auto plan = LoadNamed(GetParam());
  ASSERT_TRUE(plan);
  auto cpu = CreateBackend("cpu");
  auto gpu = CreateBackend("cuda");
  ASSERT_TRUE(cpu.ok());
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  const int64_t blocks = test::kDecodeScriptBlocks;
  auto on = PlanModelRunner::Create(*plan, **gpu, blocks, kBlockSize);
  auto off = PlanModelRunner::Create(*plan, **gpu, blocks, kBlockSize);
  auto plain = PlanModelRunner::Create(*plan, **gpu, blocks, kBlockSize);
  auto reference = PlanModelRunner::Create(*plan, **cpu, blocks, kBlockSize);
  ASSERT_TRUE(on.ok() && off.ok() && plain.ok() && reference.ok());
  (*on)->SetCudaGraphs(true);
  ASSERT_TRUE((*on)->cuda_graphs());
  (*off)->SetCudaGraphs(false);
  (*off)->SetDecodeBuckets(true);
  (*plain)->SetCudaGraphs(false);

  const std::vector<float> want = test::DecodeScript(**off);
  const std::vector<float> got = test::DecodeScript(**on);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got, want);
  const Executor::Stats &stats = (*on)->executor().stats();
  EXPECT_EQ(stats.graph_failures, 0) << "a decode step could not be captured";
  EXPECT_GE(stats.graph_captures, 4); // buckets of 8, 4, 1, 2 sequences
  EXPECT_GE(stats.graph_replays, 8);
  EXPECT_EQ((*off)->executor().stats().graph_replays, 0);

  const std::vector<float> unpadded = test::DecodeScript(**plain, &want);
  ASSERT_EQ(unpadded.size(), want.size());
  EXPECT_LE(RelativeError(unpadded, want), 1e-4);
  const std::vector<float> on_cpu = test::DecodeScript(**reference, &want);
  ASSERT_EQ(on_cpu.size(), want.size());
  EXPECT_LE(RelativeError(got, on_cpu), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RunnerOnCuda, ::testing::Values("demo", "llama", "gpt2"),
                         [](const auto &info) { return info.param; });

} // namespace
} // namespace kiln
