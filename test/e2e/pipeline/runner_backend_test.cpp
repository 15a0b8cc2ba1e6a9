// PlanModelRunner over a backend with memory of its own: on real ragged
// plans, the KV cache, arena and weights live in the simulated device's
// memory, the logits come back through it, and a prefill then a decode step
// give exactly the CPU backend's logits. A step with bad index arrays is
// refused before any kernel runs.
#include "backends/registry.h"
#include "engine/plan_runner.h"
#include "kiln/cpu.h"
#include "test/support/simulated_device.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

namespace kiln {
namespace {

using engine::PlanModelRunner;
using engine::ScheduledChunk;
using engine::Sequence;
using engine::Step;

std::unique_ptr<Plan> LoadNamed(const std::string &name) {
  const char *env = std::getenv("KILN_TEST_PLANS");
  std::stringstream ss(env ? env : "");
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t eq = item.find('=');
    if (eq != std::string::npos && item.substr(0, eq) == name) {
      auto plan = LoadPlan(item.substr(eq + 1));
      EXPECT_TRUE(plan.ok()) << plan.status().message();
      return plan.ok() ? std::move(*plan) : nullptr;
    }
  }
  ADD_FAILURE() << "KILN_TEST_PLANS has no plan named " << name;
  return nullptr;
}

constexpr int64_t kBlocks = 8, kBlockSize = 4;

Step OneChunk(Sequence &seq, int64_t start, int64_t n) {
  Step step;
  step.chunks.push_back(ScheduledChunk{&seq, seq.id, start, n, true});
  step.num_tokens = n;
  return step;
}

// Prefill of a 6-token prompt, then one decode step; the logits of both.
std::vector<float> PrefillThenDecode(PlanModelRunner &runner) {
  Sequence seq;
  seq.id = 1;
  seq.prompt = {3, 1, 4, 1, 5, 9};
  seq.block_table = {5, 2}; // not in order, so a wrong slot shows
  std::vector<float> all, logits;
  Status st = runner.Run(OneChunk(seq, 0, 6), logits);
  EXPECT_TRUE(st.ok()) << st.message();
  all = logits;
  seq.output = {2};
  st = runner.Run(OneChunk(seq, 6, 1), logits);
  EXPECT_TRUE(st.ok()) << st.message();
  all.insert(all.end(), logits.begin(), logits.end());
  return all;
}

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

INSTANTIATE_TEST_SUITE_P(Fixtures, RunnerOnDevice, ::testing::Values("demo", "llama", "gpt2"),
                         [](const auto &info) { return info.param; });

} // namespace
} // namespace kiln
