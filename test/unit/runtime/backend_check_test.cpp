// A plan checked against a backend's kernel table (core/backend.h): every
// op the table lacks is named, host ops are not held against it, and the
// registry (backends/registry.h) knows the CPU, and CUDA exactly when this
// build has it, and parses device spellings (cpu, cuda, cuda:N).
#include "backends/cpu/cpu_backend.h"
#include "backends/registry.h"
#include "core/backend.h"
#include "core/paged_indices.h"
#include "kiln/executor.h"
#include "test/support/simulated_device.h"
#include "test_models.h"
#ifdef KILN_TEST_EXPECT_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

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

#ifdef KILN_TEST_EXPECT_CUDA
constexpr bool kCudaBuilt = true;
#else
constexpr bool kCudaBuilt = false;
#endif

TEST(BackendCheck, RegistryListsCudaOnlyWhenBuilt) {
  std::vector<std::string> want = {"cpu"};
  if (kCudaBuilt)
    want.push_back("cuda");
  EXPECT_EQ(BackendNames(), want);
  EXPECT_EQ(BackendKernels("cuda") != nullptr, kCudaBuilt);
  EXPECT_EQ(BackendKernels("cuda:1"), BackendKernels("cuda"));
#ifdef KILN_TEST_EXPECT_CUDA
  EXPECT_EQ(DefaultDevice(), cuda::CudaDeviceCount() > 0 ? "cuda" : "cpu");
#else
  EXPECT_EQ(DefaultDevice(), "cpu");
#endif
}

TEST(BackendCheck, DeviceSpellings) {
  struct Good {
    const char *text, *backend;
    int index;
  };
  for (const Good &g :
       {Good{"cpu", "cpu", 0}, Good{"cuda", "cuda", 0}, Good{"cuda:0", "cuda", 0},
        Good{"cuda:1", "cuda", 1}, Good{"cuda:15", "cuda", 15}, Good{"nosuch", "nosuch", 0}}) {
    auto spec = ParseDevice(g.text);
    ASSERT_TRUE(spec.ok()) << g.text << ": " << spec.status().message();
    EXPECT_EQ(spec->backend, g.backend) << g.text;
    EXPECT_EQ(spec->index, g.index) << g.text;
  }
  for (const char *bad : {"", ":1", "cuda:", "cuda:x", "cuda:-1", "cuda:+1", "cuda:1x", "cuda:1:2",
                          "cuda: 1", "cuda:99999999999", "cpu:0"}) {
    auto spec = ParseDevice(bad);
    ASSERT_FALSE(spec.ok()) << "'" << bad << "' was accepted";
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(spec.status().message().find(std::string("'") + bad + "'"), std::string::npos)
        << spec.status().message();
  }
}

// A device index that no machine has fails with a message, never a crash:
// without a GPU it says none is visible; with one, how many are.
TEST(BackendCheck, CudaDeviceOutOfRangeFailsClearly) {
  auto backend = CreateBackend("cuda:99");
  ASSERT_FALSE(backend.ok());
  const std::string m = backend.status().message();
  if (kCudaBuilt) {
    EXPECT_EQ(backend.status().code(), StatusCode::kInvalidArgument) << m;
    EXPECT_TRUE(m.find("no CUDA device visible: ") == 0 || m.find("no CUDA device cuda:99; ") == 0)
        << m;
  } else {
    EXPECT_EQ(backend.status().code(), StatusCode::kNotFound) << m;
    EXPECT_NE(m.find("unknown backend 'cuda'"), std::string::npos) << m;
  }
  auto bad = CreateBackend("cuda:x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

// One paged_attention over graph inputs (docs/fused-ops.md): 2 query heads,
// 1 KV head, head dim 4, T tokens of N sequences over a cache of NB blocks of
// BS slots.
std::unique_ptr<Plan> PagedPlan() {
  test::TestPlan p;
  int q = p.Input("q", DType::kF32, {1, 2, "T", 4});
  int k = p.Input("k", DType::kF32, {1, 1, "T", 4});
  int v = p.Input("v", DType::kF32, {1, 1, "T", 4});
  int kc = p.Input("k_cache", DType::kF32, {"NB", 1, "BS", 4});
  int vc = p.Input("v_cache", DType::kF32, {"NB", 1, "BS", 4});
  int slots = p.Input("slots", DType::kI64, {"T"});
  int qs = p.Input("query_start", DType::kI64, {"N1"});
  int ctx = p.Input("context_lens", DType::kI64, {"N"});
  int tables = p.Input("block_tables", DType::kI64, {"N", "MB"});
  int out = p.Act("out", DType::kF32, {1, 2, "T", 4});
  p.Op("paged_attention", {q, k, v, kc, vc, slots, qs, ctx, tables}, {out},
       {test::AFloat("scale", 0.5f)});
  p.Output(out);
  return Load(std::move(p), "paged_inputs.plan");
}

// PagedPlan's inputs: two sequences, 2 new tokens of a 5-token context and
// 1 of a 3-token one, over a cache of 4 blocks of 2 slots.
struct PagedInputs {
  std::vector<float> q = std::vector<float>(2 * 3 * 4), kv = std::vector<float>(3 * 4),
                     cache = std::vector<float>(4 * 2 * 4);
  std::vector<int64_t> slots = {3, 4, 5}, qs = {0, 2, 3}, ctx = {5, 3}, tables = {0, 1, 2, 2, 3, 0};
  std::vector<TensorView> views() {
    return {{DType::kF32, {1, 2, 3, 4}, q.data()},     {DType::kF32, {1, 1, 3, 4}, kv.data()},
            {DType::kF32, {1, 1, 3, 4}, kv.data()},    {DType::kF32, {4, 1, 2, 4}, cache.data()},
            {DType::kF32, {4, 1, 2, 4}, cache.data()}, {DType::kI64, {3}, slots.data()},
            {DType::kI64, {3}, qs.data()},             {DType::kI64, {2}, ctx.data()},
            {DType::kI64, {2, 3}, tables.data()}};
  }
};

// What kiln exec checks before a device runs a ragged plan's inputs.
TEST(BackendCheck, PagedInputsAreCheckedOnTheHost) {
  auto plan = PagedPlan();
  ASSERT_TRUE(plan);
  PagedInputs in;
  std::vector<int64_t> &slots = in.slots, &ctx = in.ctx, &tables = in.tables;
  auto views = [&]() { return in.views(); };
  Status st = CheckPagedInputs(*plan, views());
  EXPECT_TRUE(st.ok()) << st.message();

  tables[4] = 4; // sequence 1 reads block 4 of 4
  st = CheckPagedInputs(*plan, views());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("(paged_attention): paged step: block_tables[1][1] = 4"),
            std::string::npos)
      << st.message();
  tables[4] = 3;
  slots[2] = 8; // past the cache's 8 slots
  st = CheckPagedInputs(*plan, views());
  EXPECT_NE(st.message().find("slots[2] = 8"), std::string::npos) << st.message();
  slots[2] = 5;
  ctx[1] = 0; // shorter than its new token
  st = CheckPagedInputs(*plan, views());
  EXPECT_NE(st.message().find("context_lens[1] = 0"), std::string::npos) << st.message();
  ctx[1] = 3;

  // Indices already in device memory cannot be read here.
  std::vector<TensorView> on_device = views();
  on_device[5].space = MemorySpace::kDevice;
  st = CheckPagedInputs(*plan, on_device);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not a graph input in host memory"), std::string::npos)
      << st.message();
}

// kiln exec's inputs come from the user: Executor::SetCheckPagedInputs makes
// Bind check them on a device backend, whose kernels read them unchecked.
TEST(BackendCheck, ExecutorChecksPagedInputsOnADeviceWhenAsked) {
  auto plan = PagedPlan();
  ASSERT_TRUE(plan);
  PagedInputs in;
  in.tables[4] = 4; // sequence 1 reads block 4 of 4
  const std::vector<TensorView> views = in.views();
  test::SimulatedDevice device;
  auto exec = Executor::Create(*plan, device);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  // Off (the engine's way: it checks each step's arrays itself), Bind takes them.
  EXPECT_TRUE((*exec)->Bind(views).ok());
  (*exec)->SetCheckPagedInputs(true);
  Status st = (*exec)->Bind(views);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("block_tables[1][1] = 4"), std::string::npos) << st.message();
  in.tables[4] = 3;
  st = (*exec)->Bind(views);
  EXPECT_TRUE(st.ok()) << st.message();
}

} // namespace
} // namespace kiln
