// PlanModelRunner over a backend with memory of its own: on real ragged
// plans, the KV cache, arena and weights live in the simulated device's
// memory, the logits come back through it, and a prefill then a decode step
// give exactly the CPU backend's logits. A step with bad index arrays is
// refused before any kernel runs.
#include "backends/registry.h"
#include "engine/plan_runner.h"
#include "kiln/cpu.h"
#include "runner_steps.h"
#include "test/support/simulated_device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace kiln {
namespace {

using engine::PlanModelRunner;
using engine::Sequence;
using test::kBlocks;
using test::kBlockSize;
using test::LoadNamed;
using test::OneChunk;
using test::PrefillThenDecode;

class RunnerOnDevice : public ::testing::TestWithParam<std::string> {};

TEST_P(RunnerOnDevice, MatchesTheCpuWithTheCacheInDeviceMemory) {
  auto plan = LoadNamed(GetParam());
  ASSERT_TRUE(plan);
  auto cpu = CreateBackend("cpu");
  ASSERT_TRUE(cpu.ok());
  // The simulated device runs the CPU's kernels on unpacked weights; with
  // packing off on the CPU too, both sum in the same order, bit for bit.
  const bool packing = CpuWeightPacking();
  SetCpuWeightPacking(false);
  auto on_cpu = PlanModelRunner::Create(*plan, **cpu, kBlocks, kBlockSize);
  SetCpuWeightPacking(packing);
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status().message();
  test::SimulatedDevice device;
  auto on_device = PlanModelRunner::Create(*plan, device, kBlocks, kBlockSize);
  ASSERT_TRUE(on_device.ok()) << on_device.status().message();
  EXPECT_EQ((*on_device)->num_blocks(), kBlocks);
  EXPECT_EQ((*on_device)->block_size(), kBlockSize);

  std::vector<float> want = PrefillThenDecode(**on_cpu);
  const uint64_t read_back = device.device_to_host_bytes;
  std::vector<float> got = PrefillThenDecode(**on_device);
  ASSERT_EQ(got.size(), static_cast<size_t>(2 * (*on_device)->vocab_size()));
  EXPECT_EQ(got, want);
  EXPECT_EQ(device.errors, "");
  EXPECT_EQ(device.device_to_host_bytes - read_back, got.size() * sizeof(float));
}

TEST_P(RunnerOnDevice, BadIndexArraysAreRefusedBeforeAnyKernelRuns) {
  auto plan = LoadNamed(GetParam());
  ASSERT_TRUE(plan);
  test::SimulatedDevice device;
  auto runner = PlanModelRunner::Create(*plan, device, kBlocks, kBlockSize);
  ASSERT_TRUE(runner.ok());
  Sequence seq;
  seq.id = 7;
  seq.prompt = {1, 2, 3, 4, 5};
  seq.block_table = {0, kBlocks}; // the second block is past the cache
  std::vector<float> logits;
  Status st = (*runner)->Run(OneChunk(seq, 0, 5), logits);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("is outside [0, 8)"), std::string::npos) << st.message();
  EXPECT_EQ(device.kernel_calls, 0);
}

// --gpu-memory-utilization: the weights are uploaded and a largest step's
// arena allocated first; the cache then takes the fraction of what is left,
// and the runner still matches the CPU.
TEST_P(RunnerOnDevice, CacheSizedByAFractionOfFreeMemory) {
  auto plan = LoadNamed(GetParam());
  ASSERT_TRUE(plan);
  auto per_block = PlanModelRunner::BytesPerBlock(*plan, kBlockSize);
  ASSERT_TRUE(per_block.ok());
  test::SimulatedDevice device;
  device.total_memory = 64ull << 20;
  PlanModelRunner::StepLimits limits;
  limits.max_tokens = 32;
  limits.max_seqs = 4;
  limits.max_context = 64;
  auto runner = PlanModelRunner::CreateForMemoryFraction(*plan, device, 0.25, kBlockSize, limits);
  ASSERT_TRUE(runner.ok()) << runner.status().message();
  const int64_t blocks = (*runner)->num_blocks();
  // What the weights and the arena left, before the cache took its share
  // (each cache allocation rounds up to 64 bytes on this device).
  const double before_cache =
      static_cast<double>(device.total_memory) -
      static_cast<double>(device.live_bytes() - static_cast<uint64_t>(blocks * *per_block));
  EXPECT_GE(blocks, 1);
  EXPECT_LE(static_cast<double>(blocks * *per_block), 0.25 * before_cache + 1);
  EXPECT_GT(static_cast<double>((blocks + 2) * *per_block), 0.25 * before_cache);

  // The reservation bound a step as large as the limits allow; a real step
  // fits in the arena it left, so running allocates nothing more.
  const int allocations = device.allocations;
  Sequence seq;
  seq.id = 3;
  seq.prompt = {3, 1, 4, 1, 5, 9};
  seq.block_table = {1, 0};
  std::vector<float> logits;
  Status st = (*runner)->Run(OneChunk(seq, 0, 6), logits);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(device.allocations, allocations);
  EXPECT_EQ(logits.size(), static_cast<size_t>((*runner)->vocab_size()));
  EXPECT_EQ(device.errors, "");

  // The cpu reports no device memory: the fraction needs a device.
  auto cpu = CreateBackend("cpu");
  ASSERT_TRUE(cpu.ok());
  auto refused = PlanModelRunner::CreateForMemoryFraction(*plan, **cpu, 0.5, kBlockSize, limits);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("needs a device backend"), std::string::npos)
      << refused.status().message();
}

// Decode steps captured and replayed (a device that records runs as CUDA
// graphs do) compute exactly what the same padded steps compute eagerly,
// for batch sizes on and between the buckets; padding itself changes no
// real sequence's logits beyond rounding.
TEST_P(RunnerOnDevice, ReplayedDecodeStepsMatchEagerOnesExactly) {
  auto plan = LoadNamed(GetParam());
  ASSERT_TRUE(plan);
  test::SimulatedDevice eager_device, graph_device, plain_device;
  graph_device.capture = true;
  auto eager = PlanModelRunner::Create(*plan, eager_device, test::kDecodeScriptBlocks, kBlockSize);
  auto graphs = PlanModelRunner::Create(*plan, graph_device, test::kDecodeScriptBlocks, kBlockSize);
  auto plain = PlanModelRunner::Create(*plan, plain_device, test::kDecodeScriptBlocks, kBlockSize);
  ASSERT_TRUE(eager.ok() && graphs.ok() && plain.ok());
  EXPECT_FALSE((*eager)->cuda_graphs()); // the device cannot capture
  (*eager)->SetDecodeBuckets(true);
  (*graphs)->SetCudaGraphs(true); // whatever KILN_CUDA_GRAPHS says
  ASSERT_TRUE((*graphs)->cuda_graphs());

  const std::vector<float> want = test::DecodeScript(**eager);
  const std::vector<float> got = test::DecodeScript(**graphs);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got, want);
  const Executor::Stats &stats = (*graphs)->executor().stats();
  EXPECT_GE(stats.graph_captures, 4); // buckets of 8, 4, 1, 2 sequences
  EXPECT_GE(stats.graph_replays, 8);
  EXPECT_EQ(stats.graph_failures, 0);
  EXPECT_EQ(graph_device.replays, stats.graph_replays);
  EXPECT_EQ(graph_device.errors, "");
  EXPECT_EQ((*eager)->executor().stats().graph_replays, 0);

  const std::vector<float> unpadded = test::DecodeScript(**plain, &want);
  ASSERT_EQ(unpadded.size(), want.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(unpadded[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  EXPECT_LE(diff, 1e-5 * std::max(scale, 1.0));
}

// KILN_PROFILE=graph's mode: a replayed decode step is timed whole, as one
// entry carrying its ops' costs, and computes what it computes unprofiled;
// the steps that are not captured (the prompt's) are still timed per op.
TEST_P(RunnerOnDevice, WholeGraphProfileTimesReplayedStepsAsOneEntry) {
  auto plan = LoadNamed(GetParam());
  ASSERT_TRUE(plan);
  test::SimulatedDevice plain_device, profiled_device;
  plain_device.capture = profiled_device.capture = true;
  auto plain = PlanModelRunner::Create(*plan, plain_device, test::kDecodeScriptBlocks, kBlockSize);
  auto profiled =
      PlanModelRunner::Create(*plan, profiled_device, test::kDecodeScriptBlocks, kBlockSize);
  ASSERT_TRUE(plain.ok() && profiled.ok());
  (*plain)->SetCudaGraphs(true);
  (*profiled)->SetCudaGraphs(true);
  (*profiled)->executor().SetProfiling(true, /*whole_graphs=*/true);
  const std::vector<float> want = test::DecodeScript(**plain);
  const std::vector<float> got = test::DecodeScript(**profiled);
  EXPECT_EQ(got, want);

  const Executor::Stats &stats = (*profiled)->executor().stats();
  ASSERT_GE(stats.graph_replays, 8);
  const Executor::Profile p = (*profiled)->executor().profile();
  const auto entry = [&](const std::string &name) -> const Executor::OpTime * {
    for (const Executor::OpTime &t : p.ops)
      if (t.type == name)
        return &t;
    return nullptr;
  };
  const Executor::OpTime *replay = entry("graph replay"), *capture = entry("graph capture");
  ASSERT_NE(replay, nullptr) << (*profiled)->executor().ProfileTable();
  ASSERT_NE(capture, nullptr);
  // Each replayed run is one call, not one per op.
  EXPECT_EQ(replay->calls, stats.graph_replays - stats.graph_captures);
  EXPECT_EQ(capture->calls, stats.graph_captures);
  EXPECT_GT(replay->bytes, 0);
  EXPECT_GT(replay->flops, 0);
  EXPECT_GE(replay->seconds, 0);
  // The prompt steps ran eagerly, op by op: entries by op type.
  bool per_op = false;
  for (const Executor::OpTime &t : p.ops)
    per_op = per_op || t.type.rfind("graph ", 0) != 0;
  EXPECT_TRUE(per_op) << (*profiled)->executor().ProfileTable();
  EXPECT_EQ(profiled_device.errors, "");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RunnerOnDevice, ::testing::Values("demo", "llama", "gpt2"),
                         [](const auto &info) { return info.param; });

} // namespace
} // namespace kiln
