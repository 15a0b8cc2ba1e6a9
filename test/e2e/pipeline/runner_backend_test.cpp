// PlanModelRunner over a backend with memory of its own, on real ragged
// plans. On the simulated device (test/support/simulated_device.h) the KV
// cache, arena and weights live in its memory, the logits come back through
// it, and a prefill then a decode step give exactly the CPU backend's logits.
// On the device under test ("gpu", test/support/test_device.h; skipped where
// none is visible) the same steps give the CPU's logits within 1e-4. A step
// with bad index arrays is refused before any kernel runs, and the runner
// still works after.
#include "backends/registry.h"
#include "engine/plan_runner.h"
#include "kiln/cpu.h"
#include "test/support/simulated_device.h"
#include "test/support/test_device.h"

#include <gtest/gtest.h>

#include <cmath>
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

// The simulated device, or the device under test.
constexpr const char *kSimulated = "simulated";

// Parametrized by role ("simulated" or "gpu") and plan.
class RunnerOnDevice : public ::testing::TestWithParam<test::RoleAndPlan> {
protected:
  void SetUp() override {
    if (GetParam().role == kSimulated) {
      device_ = &simulated_;
      return;
    }
    KILN_SKIP_UNLESS_ROLE_RUNS(GetParam().role);
    auto backend = CreateBackend(test::BackendOfRole(GetParam().role));
    ASSERT_TRUE(backend.ok()) << backend.status().message();
    owned_ = std::move(*backend);
    device_ = owned_.get();
  }
  bool simulated() const { return device_ == &simulated_; }

  test::SimulatedDevice simulated_;
  std::unique_ptr<Backend> owned_;
  Backend *device_ = nullptr;
};

TEST_P(RunnerOnDevice, MatchesTheCpuWithTheCacheInDeviceMemory) {
  auto plan = LoadNamed(GetParam().plan);
  ASSERT_TRUE(plan);
  EXPECT_EQ(device_->memory_space(), MemorySpace::kDevice) << "a device keeps its own memory";
  auto cpu = CreateBackend("cpu");
  ASSERT_TRUE(cpu.ok());
  // The simulated device runs the CPU's kernels on unpacked weights; with
  // packing off on the CPU too, both sum in the same order, bit for bit.
  const bool packing = CpuWeightPacking();
  SetCpuWeightPacking(false);
  auto on_cpu = PlanModelRunner::Create(*plan, **cpu, kBlocks, kBlockSize);
  SetCpuWeightPacking(packing);
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status().message();
  auto on_device = PlanModelRunner::Create(*plan, *device_, kBlocks, kBlockSize);
  ASSERT_TRUE(on_device.ok()) << on_device.status().message();
  EXPECT_EQ((*on_device)->num_blocks(), kBlocks);
  EXPECT_EQ((*on_device)->block_size(), kBlockSize);
  const int64_t vocab = (*on_device)->vocab_size();

  std::vector<float> want = PrefillThenDecode(**on_cpu);
  const uint64_t read_back = simulated_.device_to_host_bytes;
  std::vector<float> got = PrefillThenDecode(**on_device);
  ASSERT_EQ(got.size(), static_cast<size_t>(2 * vocab));
  ASSERT_EQ(want.size(), got.size());
  if (simulated()) {
    EXPECT_EQ(got, want);
    EXPECT_EQ(simulated_.errors, "");
    EXPECT_EQ(simulated_.device_to_host_bytes - read_back, got.size() * sizeof(float));
    return;
  }
  // Another device sums in another order: each row within 1e-4 of its
  // largest magnitude.
  for (int64_t row = 0; row < 2; ++row) {
    float max_diff = 0, max_ref = 0;
    for (int64_t v = row * vocab; v < (row + 1) * vocab; ++v) {
      max_diff = std::max(max_diff, std::fabs(got[v] - want[v]));
      max_ref = std::max(max_ref, std::fabs(want[v]));
    }
    EXPECT_LE(max_diff, 1e-4f * max_ref) << (row == 0 ? "prefill" : "decode") << " logits";
  }
}

TEST_P(RunnerOnDevice, BadIndexArraysAreRefusedBeforeAnyKernelRuns) {
  auto plan = LoadNamed(GetParam().plan);
  ASSERT_TRUE(plan);
  auto runner = PlanModelRunner::Create(*plan, *device_, kBlocks, kBlockSize);
  ASSERT_TRUE(runner.ok()) << runner.status().message();
  Sequence seq;
  seq.id = 7;
  seq.prompt = {1, 2, 3, 4, 5};
  seq.block_table = {0, kBlocks}; // the second block is past the cache
  std::vector<float> logits;
  Status st = (*runner)->Run(OneChunk(seq, 0, 5), logits);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("is outside [0, 8)"), std::string::npos) << st.message();
  if (simulated())
    EXPECT_EQ(simulated_.kernel_calls, 0);
  // The refusal left the runner usable: the same prompt in good blocks runs.
  seq.block_table = {0, 1};
  st = (*runner)->Run(OneChunk(seq, 0, 5), logits);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(static_cast<int64_t>(logits.size()), (*runner)->vocab_size());
  for (float x : logits)
    ASSERT_TRUE(std::isfinite(x));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RunnerOnDevice,
                         ::testing::ValuesIn(test::EveryRoleAndPlan({kSimulated, test::kGpuRole},
                                                                    {"demo", "llama", "gpt2"})),
                         test::RoleAndPlanName);

} // namespace
} // namespace kiln
