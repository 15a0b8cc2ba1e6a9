// The executor: numbers against a plain reference, the host shape pass,
// arena slot sharing and reuse, the layout cache, and input checking.
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "test_models.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

namespace kiln {
namespace {

using test::Mlp;
using test::TempPath;

std::unique_ptr<Plan> Load(test::TestPlan p, const std::string &name) {
  std::string path = TempPath(name);
  EXPECT_EQ(p.Write(path), "");
  auto plan = LoadPlan(path);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(*plan) : nullptr;
}

std::unique_ptr<Executor> MakeExecutor(const Plan &plan) {
  auto e = Executor::Create(plan);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? std::move(*e) : nullptr;
}

TensorView View(std::vector<float> &data, Shape shape) {
  return TensorView{DType::kF32, std::move(shape), data.data()};
}

TEST(Executor, MlpMatchesReference) {
  Mlp m;
  auto plan = Load(m.Build(), "exec_mlp.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  ASSERT_TRUE(exec);
  std::vector<float> x = {1, 2, 3, 4, -1, 0.5f, 0, 2};
  ASSERT_TRUE(exec->Bind({View(x, {2, 4})}).ok());
  ASSERT_TRUE(exec->Run().ok());
  const TensorView &y = exec->output(0);
  ASSERT_EQ(y.shape, (Shape{2, 3}));
  for (int r = 0; r < 2; ++r) {
    std::vector<float> want = m.Reference(&x[r * 4]);
    for (int j = 0; j < 3; ++j)
      EXPECT_NEAR(y.as<float>()[r * 3 + j], want[j], 1e-5f);
  }
}

TEST(Executor, ProfileChargesEveryOpToItsTypeAndLeavesResultsAlone) {
  Mlp m;
  auto plan = Load(m.Build(), "exec_profile.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  ASSERT_TRUE(exec);
  std::vector<float> x = {1, 2, 3, 4, -1, 0.5f, 0, 2};
  ASSERT_TRUE(exec->Bind({View(x, {2, 4})}).ok());
  ASSERT_TRUE(exec->Run().ok());
  const std::vector<float> plain(exec->output(0).as<float>(), exec->output(0).as<float>() + 6);
  EXPECT_EQ(exec->profile().runs, 0); // off unless asked for

  exec->SetProfiling(true);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(exec->Bind({View(x, {2, 4})}).ok());
    ASSERT_TRUE(exec->Run().ok());
  }
  for (int j = 0; j < 6; ++j)
    EXPECT_EQ(exec->output(0).as<float>()[j], plain[j]);
  const Executor::Profile p = exec->profile();
  EXPECT_EQ(p.runs, 3);
  EXPECT_EQ(p.binds, 3);
  // Every op of the plan (test_models.h's Mlp), once a run, under its type.
  const std::map<std::string, int64_t> want = {{"add", 3}, {"matmul", 3}, {"softmax", 3}};
  std::map<std::string, int64_t> got;
  double op_seconds = 0;
  for (const Executor::OpTime &t : p.ops) {
    got[t.type] = t.calls;
    EXPECT_GE(t.seconds, 0);
    op_seconds += t.seconds;
  }
  EXPECT_EQ(got, want);
  EXPECT_LE(op_seconds, p.run_seconds);
  EXPECT_FALSE(p.device_timing); // the cpu waits after each op
  // The roofline's estimates: x [2, 4] @ W [4, 3] is 2 * 2 * 4 * 3 FLOP a
  // run; softmax moves its [2, 3] in and out and computes no product.
  for (const Executor::OpTime &t : p.ops) {
    if (t.type == "matmul")
      EXPECT_DOUBLE_EQ(t.flops, 3 * 48.0);
    if (t.type == "softmax") {
      EXPECT_EQ(t.flops, 0);
      EXPECT_DOUBLE_EQ(t.bytes, 3 * 2 * 6 * 4.0);
    }
  }
  for (size_t i = 1; i < p.ops.size(); ++i)
    EXPECT_GE(p.ops[i - 1].seconds, p.ops[i].seconds); // most time first
  const std::string table = exec->ProfileTable();
  EXPECT_NE(table.find("3 runs, 3 binds"), std::string::npos) << table;
  for (const auto &[type, calls] : want)
    EXPECT_NE(table.find(type), std::string::npos) << table;
}

TEST(Executor, ProfileSkipLeavesWarmUpRunsOut) {
  Mlp m;
  auto plan = Load(m.Build(), "exec_profile_skip.plan");
  ASSERT_TRUE(plan);
  // KILN_PROFILE and KILN_PROFILE_SKIP are read when the executor is made.
  ::setenv("KILN_PROFILE", "shape", 1);
  ::setenv("KILN_PROFILE_SKIP", "2", 1);
  auto exec = MakeExecutor(*plan);
  ::unsetenv("KILN_PROFILE");
  ::unsetenv("KILN_PROFILE_SKIP");
  ASSERT_TRUE(exec);
  std::vector<float> x = {1, 2, 3, 4, -1, 0.5f, 0, 2};
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(exec->Bind({View(x, {2, 4})}).ok());
    ASSERT_TRUE(exec->Run().ok());
  }
  const Executor::Profile p = exec->profile();
  EXPECT_EQ(p.runs, 3); // 5 runs, the first 2 skipped
  std::map<std::string, int64_t> got;
  for (const Executor::OpTime &t : p.ops)
    got[t.type] = t.calls;
  // With KILN_PROFILE=shape an entry is a type and a shape: x [2, 4] @ W [4, 3].
  const std::map<std::string, int64_t> want = {{"add 2x3", 3}, {"matmul 2x4x3", 3},
                                               {"softmax 2x3", 3}};
  EXPECT_EQ(got, want);
  exec->SetProfiling(false); // no table on stderr at destruction
}

TEST(Executor, TensorsInOneSlotShareMemory) {
  Mlp m;
  auto plan = Load(m.Build(), "exec_slots.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  std::vector<float> x(4 * 5, 0.25f);
  ASSERT_TRUE(exec->Bind({View(x, {5, 4})}).ok());
  ASSERT_TRUE(exec->Run().ok());
  // h and y share slot 0; z has its own.
  EXPECT_EQ(exec->TensorData(m.h), exec->TensorData(m.y));
  EXPECT_NE(exec->TensorData(m.h), exec->TensorData(m.z));
  // Two slots of 5x3 floats (60 bytes), each rounded up to 64.
  EXPECT_EQ(exec->stats().arena_bytes, 128u);
  EXPECT_EQ(exec->stats().arena_allocations, 1);
}

// A reshape whose result shares its operand's slot (a view) copies nothing
// and reads back the operand's values.
TEST(Executor, ViewSharesItsOperandsBytes) {
  test::ViewPlan m;
  auto plan = Load(m.Build(), "exec_view.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  ASSERT_TRUE(exec);
  std::vector<float> x = {1, -2, 3, -4, 5, -6, 0.5f, 7, -8, 9, -10, 11};
  ASSERT_TRUE(exec->Bind({View(x, {2, 6})}).ok());
  ASSERT_TRUE(exec->Run().ok());
  EXPECT_EQ(exec->TensorData(m.h), exec->TensorData(m.v));
  const TensorView &y = exec->output(0);
  ASSERT_EQ(y.shape, (Shape{2, 2, 3}));
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(y.as<float>()[i], -std::max(x[i], 0.0f)) << i;
}

TEST(Executor, ArenaGrowsGeometricallyWhenShapesCreep) {
  // A decode loop binds a slightly larger shape every step; reallocating the
  // arena each time would touch fresh pages every step.
  Mlp m;
  auto plan = Load(m.Build(), "exec_creep.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  std::vector<float> x(200 * 4, 0.5f);
  for (int64_t rows = 16; rows <= 200; ++rows) {
    ASSERT_TRUE(exec->Bind({View(x, {rows, 4})}).ok());
    ASSERT_TRUE(exec->Run().ok());
    ASSERT_GE(exec->stats().arena_capacity, exec->stats().arena_bytes);
  }
  // 16 -> 200 rows is 12.5x; growing by half each time needs about 7 steps.
  EXPECT_LE(exec->stats().arena_allocations, 8);
  EXPECT_GE(exec->stats().arena_allocations, 2);
}

TEST(Executor, ArenaIsReusedAndLayoutsCached) {
  Mlp m;
  auto plan = Load(m.Build(), "exec_reuse.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  std::vector<float> big(8 * 4, 1.0f), small(2 * 4, 2.0f);
  ASSERT_TRUE(exec->Bind({View(big, {8, 4})}).ok());
  ASSERT_TRUE(exec->Run().ok());
  const void *arena_y = exec->TensorData(m.y);
  // A smaller batch fits the same arena: no new allocation.
  ASSERT_TRUE(exec->Bind({View(small, {2, 4})}).ok());
  ASSERT_TRUE(exec->Run().ok());
  EXPECT_EQ(exec->stats().arena_allocations, 1);
  EXPECT_EQ(exec->TensorData(m.y), arena_y);
  std::vector<float> want = m.Reference(small.data());
  EXPECT_NEAR(exec->output(0).as<float>()[1], want[1], 1e-5f);
  EXPECT_EQ(exec->stats().shape_passes, 2);
  // Same shapes again: served from the cache.
  ASSERT_TRUE(exec->Bind({View(big, {8, 4})}).ok());
  ASSERT_TRUE(exec->Run().ok());
  EXPECT_EQ(exec->stats().shape_passes, 2);
  EXPECT_EQ(exec->stats().layout_cache_hits, 1);
  EXPECT_EQ(exec->output(0).shape, (Shape{8, 3}));
  // A larger batch grows the arena.
  std::vector<float> bigger(64 * 4, 0.5f);
  ASSERT_TRUE(exec->Bind({View(bigger, {64, 4})}).ok());
  ASSERT_TRUE(exec->Run().ok());
  EXPECT_EQ(exec->stats().arena_allocations, 2);
  EXPECT_GE(exec->stats().arena_capacity, 2u * 64 * 3 * 4);
}

TEST(Executor, HostShapeSubgraphDrivesReshape) {
  auto plan = Load(test::BuildReshapePlan(), "exec_reshape.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  for (int batch : {1, 3, 2}) {
    std::vector<float> x(batch * 6);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(i) * 0.5f;
    ASSERT_TRUE(exec->Bind({View(x, {batch, 6})}).ok());
    ASSERT_TRUE(exec->Run().ok());
    const TensorView &y = exec->output(0);
    ASSERT_EQ(y.shape, (Shape{batch, 3, 2}));
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(y.as<float>()[i], x[i]);
  }
}

TEST(Executor, RejectsBadInputs) {
  Mlp m;
  auto plan = Load(m.Build(), "exec_inputs.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  std::vector<float> x(12, 1.0f);
  Status st = exec->Bind({View(x, {3, 4}), View(x, {3, 4})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  st = exec->Bind({View(x, {4, 3})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("expects [batch, 4]"), std::string::npos) << st.message();
  st = exec->Bind({TensorView{DType::kI32, {3, 4}, x.data()}});
  EXPECT_NE(st.message().find("i32"), std::string::npos) << st.message();
  st = exec->Bind({TensorView{DType::kF32, {3, 4}, nullptr}});
  EXPECT_NE(st.message().find("no data"), std::string::npos) << st.message();
  EXPECT_FALSE(exec->Run().ok()); // nothing bound
}

TEST(Executor, SymbolicDimsMustAgreeAcrossInputs) {
  test::TestPlan p;
  int a = p.Input("a", DType::kF32, {"batch", 2});
  int b = p.Input("b", DType::kF32, {"batch", 2});
  int c = p.Act("c", DType::kF32, {"batch", 2});
  p.Op("add", {a, b}, {c});
  p.Output(c);
  auto plan = Load(std::move(p), "exec_symbols.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  std::vector<float> x(6, 1.0f);
  Status st = exec->Bind({View(x, {3, 2}), View(x, {1, 2})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("batch = 1"), std::string::npos) << st.message();
}

TEST(Executor, OpErrorsNameTheNode) {
  // matmul of [batch, 4] by [3, 3]: the shapes disagree at run time.
  test::TestPlan p;
  int x = p.Input("x", DType::kF32, {"batch", 4});
  int w = p.Weight("W", DType::kF32, {3, 3}, std::vector<float>(9, 1.0f));
  int y = p.Act("y", DType::kF32, {"batch", 3});
  p.Op("matmul", {x, w}, {y});
  p.Output(y);
  auto plan = Load(std::move(p), "exec_err.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  std::vector<float> xs(8, 1.0f);
  Status st = exec->Bind({View(xs, {2, 4})});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("op 'node_0_matmul' (matmul)"), std::string::npos) << st.message();
}

TEST(Executor, InferredShapeMustMatchThePlan) {
  // The plan claims y is [batch, 5]; the matmul makes [batch, 3].
  test::TestPlan p;
  int x = p.Input("x", DType::kF32, {"batch", 4});
  int w = p.Weight("W", DType::kF32, {4, 3}, std::vector<float>(12, 1.0f));
  int y = p.Act("y", DType::kF32, {"batch", 5});
  p.Op("matmul", {x, w}, {y});
  p.Output(y);
  auto plan = Load(std::move(p), "exec_mismatch.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  std::vector<float> xs(8, 1.0f);
  Status st = exec->Bind({View(xs, {2, 4})});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("but the plan says [batch, 5]"), std::string::npos) << st.message();
}

TEST(Executor, HostSizeReadsOnlyTheDimsOfARunTimeTensor) {
  // size, like shape, reads only its operand's dims: a host size of an
  // activation computed at run time sizes a reshape during Bind.
  test::TestPlan p;
  int x = p.Input("x", DType::kF32, {"batch", 1});
  int y = p.Act("y", DType::kF32, {"batch", 1});
  int n = p.HostAct("n", DType::kI64, {});
  int axes = p.Weight("axes", DType::kI64, {1}, std::vector<int64_t>{0});
  int n1 = p.HostAct("n1", DType::kI64, {1});
  int z = p.Act("z", DType::kF32, {"batch"});
  p.Op("neg", {x}, {y});
  p.Op("size", {y}, {n});
  p.Op("unsqueeze", {n, axes}, {n1});
  p.Op("reshape", {y, n1}, {z}, {test::AInt("allowzero", 0)});
  p.Output(z);
  auto plan = Load(std::move(p), "exec_host_size.plan");
  ASSERT_TRUE(plan);
  auto exec = MakeExecutor(*plan);
  std::vector<float> xs = {1, 2, 3};
  ASSERT_TRUE(exec->Bind({View(xs, {3, 1})}).ok());
  ASSERT_TRUE(exec->Run().ok());
  ASSERT_EQ(exec->output(0).shape, (Shape{3}));
  EXPECT_EQ(exec->output(0).as<float>()[2], -3.0f);
}

TEST(Executor, HostOpMayNotReadRunTimeValues) {
  test::TestPlan p;
  int x = p.Input("x", DType::kF32, {2});
  int y = p.Act("y", DType::kF32, {2});
  int z = p.HostAct("z", DType::kI64, {2});
  p.Op("neg", {x}, {y});
  p.Op("cast", {y}, {z}, {test::AInt("to", static_cast<int64_t>(DType::kI64))});
  p.Output(z);
  auto plan = Load(std::move(p), "exec_host_bad.plan");
  ASSERT_TRUE(plan);
  auto exec = Executor::Create(*plan);
  ASSERT_FALSE(exec.ok());
  EXPECT_NE(exec.status().message().find("computed only at run time"), std::string::npos)
      << exec.status().message();
}

} // namespace
} // namespace kiln
