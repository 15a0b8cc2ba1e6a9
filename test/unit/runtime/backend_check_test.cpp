// A plan checked against a backend's kernel table (core/backend.h): every
// op the table lacks is named, host ops are not held against it, and the
// registry (backends/registry.h) knows the CPU and nothing else by default.
#include "backends/cpu/cpu_backend.h"
#include "backends/registry.h"
#include "core/backend.h"
#include "test_models.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kiln {
namespace {

using test::TempPath;

// The CPU's kernels without `drop`, as a backend that lacks those ops would
// have them.
KernelTable CpuKernelsWithout(const std::vector<std::string> &drop) {
  std::vector<KernelDef> defs;
  for (const std::string &type : cpu::CpuKernels().Types())
    if (std::find(drop.begin(), drop.end(), type) == drop.end())
      defs.push_back(*cpu::CpuKernels().Find(type));
  return KernelTable(std::move(defs));
}

std::unique_ptr<Plan> Load(test::TestPlan p, const std::string &name) {
  std::string path = TempPath(name);
  EXPECT_EQ(p.Write(path), "");
  auto plan = LoadPlan(path);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(*plan) : nullptr;
}

TEST(BackendCheck, NamesEveryMissingOpAndTheBackend) {
  test::Mlp m;
  auto plan = Load(m.Build(), "backend_check_mlp.plan");
  ASSERT_TRUE(plan);
  EXPECT_TRUE(CheckPlanRunsOn(*plan, cpu::CpuKernels(), "cpu").ok());
  EXPECT_TRUE(MissingKernels(*plan, cpu::CpuKernels()).empty());

  KernelTable one = CpuKernelsWithout({"softmax"});
  EXPECT_EQ(MissingKernels(*plan, one), std::vector<std::string>{"softmax"});
  Status s = CheckPlanRunsOn(*plan, one, "fake");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("fake backend"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'softmax'"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("'matmul'"), std::string::npos) << s.message();

  KernelTable two = CpuKernelsWithout({"softmax", "matmul", "relu"});
  EXPECT_EQ(MissingKernels(*plan, two), (std::vector<std::string>{"matmul", "softmax"}));
  s = CheckPlanRunsOn(*plan, two, "fake");
  EXPECT_NE(s.message().find("'matmul', 'softmax'"), std::string::npos) << s.message();
}

TEST(BackendCheck, HostOpsRunOnTheHostWhateverTheBackend) {
  auto plan = Load(test::BuildReshapePlan(), "backend_check_reshape.plan");
  ASSERT_TRUE(plan);
  // shape/gather/unsqueeze/concat compute the reshape's shape on the host.
  EXPECT_TRUE(MissingKernels(*plan, CpuKernelsWithout({"shape", "gather"})).empty());
  EXPECT_EQ(MissingKernels(*plan, CpuKernelsWithout({"shape", "reshape"})),
            std::vector<std::string>{"reshape"});
}

TEST(BackendCheck, RegistryKnowsTheBuiltBackends) {
  std::vector<std::string> names = BackendNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "cpu");
  EXPECT_EQ(BackendKernels("cpu"), &cpu::CpuKernels());
  EXPECT_EQ(BackendKernels("nosuch"), nullptr);
  auto backend = CreateBackend("nosuch");
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.status().message().find("cpu"), std::string::npos);
}

} // namespace
} // namespace kiln
