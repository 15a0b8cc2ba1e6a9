// The layout cache of Executor::Bind: its signature holds the input shapes
// and the values of the inputs the shape pass reads, nothing else. Decode
// steps of one shape that differ in their index values (slots, context
// lengths, block tables, token ids) hit; a new shape misses; a device op
// whose rule reads a graph input's values (a Reshape's shape input) keys
// those values.
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "test_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln {
namespace {

using test::AFloat;
using test::AInt;
using test::TempPath;

std::unique_ptr<Plan> Load(test::TestPlan p, const std::string &name) {
  std::string path = TempPath(name);
  EXPECT_EQ(p.Write(path), "");
  auto plan = LoadPlan(path);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(*plan) : nullptr;
}

// paged_attention over graph inputs: q [1, 2, T, 4], one KV head, a cache
// of 4 blocks of 2 tokens.
constexpr int64_t kBlocks = 4, kBlockSize = 2, kHeadDim = 4;

test::TestPlan PagedPlan() {
  test::TestPlan p;
  int q = p.Input("q", DType::kF32, {1, 2, "T", kHeadDim});
  int k = p.Input("k", DType::kF32, {1, 1, "T", kHeadDim});
  int v = p.Input("v", DType::kF32, {1, 1, "T", kHeadDim});
  int kc = p.Input("k_cache", DType::kF32, {kBlocks, 1, kBlockSize, kHeadDim});
  int vc = p.Input("v_cache", DType::kF32, {kBlocks, 1, kBlockSize, kHeadDim});
  int slots = p.Input("kv_slots", DType::kI64, {"T"});
  int qstart = p.Input("query_start", DType::kI64, {"Q"});
  int ctx = p.Input("context_lens", DType::kI64, {"N"});
  int tables = p.Input("block_tables", DType::kI64, {"N", "W"});
  int out = p.Act("out", DType::kF32, {1, 2, "T", kHeadDim});
  p.Op("paged_attention", {q, k, v, kc, vc, slots, qstart, ctx, tables}, {out},
       {AFloat("scale", 0.5f)});
  p.Output(out);
  return p;
}

// One decode step of `ctx.size()` sequences over fresh caches.
struct DecodeStep {
  std::vector<int64_t> slots, qstart, ctx, tables;
  int64_t width = 1;
  std::vector<float> q, k, v, kc, vc;

  DecodeStep(std::vector<int64_t> slots_, std::vector<int64_t> ctx_, std::vector<int64_t> tables_,
             int64_t width_)
      : slots(std::move(slots_)), ctx(std::move(ctx_)), tables(std::move(tables_)), width(width_) {
    const int64_t n = static_cast<int64_t>(ctx.size());
    for (int64_t s = 0; s <= n; ++s)
      qstart.push_back(s);
    q.resize(2 * n * kHeadDim);
    k.resize(n * kHeadDim);
    v.resize(n * kHeadDim);
    for (size_t i = 0; i < q.size(); ++i)
      q[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = 0.2f * static_cast<float>(i % 5) - 0.4f;
      v[i] = 0.05f * static_cast<float>(i);
    }
    const size_t cache = kBlocks * kBlockSize * kHeadDim;
    kc.resize(cache);
    vc.resize(cache);
    for (size_t i = 0; i < cache; ++i) {
      kc[i] = 0.01f * static_cast<float>(i % 11);
      vc[i] = 0.02f * static_cast<float>(i % 13) - 0.1f;
    }
  }

  std::vector<TensorView> Inputs() {
    const int64_t n = static_cast<int64_t>(ctx.size());
    auto f = [](std::vector<float> &d, Shape s) { return TensorView{DType::kF32, s, d.data()}; };
    auto i = [](std::vector<int64_t> &d, Shape s) { return TensorView{DType::kI64, s, d.data()}; };
    return {f(q, {1, 2, n, kHeadDim}),
            f(k, {1, 1, n, kHeadDim}),
            f(v, {1, 1, n, kHeadDim}),
            f(kc, {kBlocks, 1, kBlockSize, kHeadDim}),
            f(vc, {kBlocks, 1, kBlockSize, kHeadDim}),
            i(slots, {n}),
            i(qstart, {n + 1}),
            i(ctx, {n}),
            i(tables, {n, width})};
  }
};

std::vector<float> RunStep(Executor &exec, DecodeStep &step) {
  Status st = exec.Bind(step.Inputs());
  EXPECT_TRUE(st.ok()) << st.message();
  st = exec.Run();
  EXPECT_TRUE(st.ok()) << st.message();
  const TensorView &out = exec.output(0);
  return std::vector<float>(out.as<float>(), out.as<float>() + out.numel());
}

TEST(BindCache, DecodeStepsOfOneShapeHitWhateverTheirIndices) {
  auto plan = Load(PagedPlan(), "bind_cache_paged.plan");
  ASSERT_TRUE(plan);
  auto exec = Executor::Create(*plan);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  // Two sequences at positions 1 and 1, then 2 and 3, then 0 and 2: other
  // slots, context lengths and tables, one shape.
  DecodeStep a({1, 5}, {2, 2}, {0, 0, 2, 0}, 2);
  DecodeStep b({4, 3}, {3, 4}, {0, 2, 3, 1}, 2);
  DecodeStep c({6, 2}, {1, 3}, {3, 1, 0, 1}, 2);
  RunStep(**exec, a);
  std::vector<float> got_b = RunStep(**exec, b);
  std::vector<float> got_c = RunStep(**exec, c);
  EXPECT_EQ((*exec)->stats().shape_passes, 1);
  EXPECT_EQ((*exec)->stats().layout_cache_hits, 2);
  // A hit computes what a fresh executor computes.
  for (auto [step, got] : {std::pair{&b, &got_b}, std::pair{&c, &got_c}}) {
    auto fresh = Executor::Create(*plan);
    ASSERT_TRUE(fresh.ok());
    DecodeStep again = *step;
    EXPECT_EQ(RunStep(**fresh, again), *got);
  }
}

TEST(BindCache, ANewShapeMisses) {
  auto plan = Load(PagedPlan(), "bind_cache_shapes.plan");
  ASSERT_TRUE(plan);
  auto exec = Executor::Create(*plan);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  DecodeStep two({1, 5}, {2, 2}, {0, 2}, 1);
  RunStep(**exec, two);
  // Three sequences: another batch.
  DecodeStep three({1, 5, 6}, {2, 2, 1}, {0, 2, 3}, 1);
  RunStep(**exec, three);
  EXPECT_EQ((*exec)->stats().shape_passes, 2);
  // A wider block table: another shape.
  DecodeStep wide({1, 5}, {2, 2}, {0, 0, 2, 0}, 2);
  RunStep(**exec, wide);
  EXPECT_EQ((*exec)->stats().shape_passes, 3);
  EXPECT_EQ((*exec)->stats().layout_cache_hits, 0);
  // The first shape again: still cached.
  DecodeStep again({0, 4}, {1, 1}, {0, 2}, 1);
  RunStep(**exec, again);
  EXPECT_EQ((*exec)->stats().shape_passes, 3);
  EXPECT_EQ((*exec)->stats().layout_cache_hits, 1);
}

// Entries in use stay while one-off shapes come and go (least recently
// used out, not oldest).
TEST(BindCache, AShapeInUseOutlivesManyOneOffShapes) {
  auto plan = Load(PagedPlan(), "bind_cache_lru.plan");
  ASSERT_TRUE(plan);
  auto exec = Executor::Create(*plan);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  // n sequences of one token each that store nothing and read block 0.
  auto step = [](size_t n) {
    return DecodeStep(std::vector<int64_t>(n, -1), std::vector<int64_t>(n, 1),
                      std::vector<int64_t>(n, 0), 1);
  };
  DecodeStep one = step(1);
  RunStep(**exec, one);
  for (size_t n = 2; n <= 48; ++n) {
    DecodeStep other = step(n);
    RunStep(**exec, other);
    RunStep(**exec, one);
  }
  EXPECT_EQ((*exec)->stats().shape_passes, 48);
  EXPECT_EQ((*exec)->stats().layout_cache_hits, 47);
}

// reshape(x, s) with s a graph input: a device op's rule reads s's values.
TEST(BindCache, ValuesADeviceOpsRuleReadsAreKeyed) {
  test::TestPlan p;
  int x = p.Input("x", DType::kF32, {6});
  int s = p.Input("s", DType::kI64, {2});
  int y = p.Act("y", DType::kF32, {"a", "b"});
  p.Op("reshape", {x, s}, {y}, {AInt("allowzero", 0)});
  p.Output(y);
  auto plan = Load(std::move(p), "bind_cache_reshape.plan");
  ASSERT_TRUE(plan);
  auto exec = Executor::Create(*plan);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  std::vector<float> xs = {1, 2, 3, 4, 5, 6};
  auto bind = [&](std::vector<int64_t> shape) {
    std::vector<TensorView> in = {TensorView{DType::kF32, {6}, xs.data()},
                                  TensorView{DType::kI64, {2}, shape.data()}};
    Status st = (*exec)->Bind(in);
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE((*exec)->Run().ok());
    return (*exec)->output(0).shape;
  };
  EXPECT_EQ(bind({2, 3}), (Shape{2, 3}));
  EXPECT_EQ(bind({3, 2}), (Shape{3, 2}));
  EXPECT_EQ(bind({2, 3}), (Shape{2, 3}));
  EXPECT_EQ((*exec)->stats().layout_cache_hits, 1);
}

} // namespace
} // namespace kiln
