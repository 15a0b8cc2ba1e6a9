// Weights packed at Executor::Create (executor_pack.cpp): which weights are
// packed, which have their plan pages released, and that every product gives
// the same numbers packed or not.
#include "backends/cpu/half_via_f32.h"
#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/products_packed_matrix.h"
#include "kiln/cpu.h"
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "test_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace kiln {
namespace {

using test::AInt;
using test::AttrSpec;
using test::DimSpec;
using test::TempPath;
using test::TestPlan;

AttrSpec AString(std::string name, std::string value) {
  AttrSpec a;
  a.name = std::move(name);
  a.kind = fb::AttrKind::String;
  a.s = std::move(value);
  return a;
}

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

// Sets packing for one scope and restores the default (on) after.
class Packing {
public:
  explicit Packing(bool on) { SetCpuWeightPacking(on); }
  ~Packing() { SetCpuWeightPacking(true); }
};

struct Result {
  Executor::Stats stats;
  std::vector<std::vector<float>> outputs;
};

// Loads `p`, runs it once on `x` with packing on or off; outputs as f32
// (half ones widened).
Result RunPlanOn(TestPlan p, const std::string &name, const TensorView &x, bool packing) {
  Packing scope(packing);
  const std::string path = TempPath(name);
  EXPECT_EQ(p.Write(path), "");
  auto plan = LoadPlan(path);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  Result r;
  if (!plan.ok())
    return r;
  auto exec = Executor::Create(**plan);
  EXPECT_TRUE(exec.ok()) << exec.status().message();
  if (!exec.ok())
    return r;
  EXPECT_TRUE((*exec)->Bind({x}).ok());
  Status st = (*exec)->Run();
  EXPECT_TRUE(st.ok()) << st.message();
  r.stats = (*exec)->stats();
  for (const TensorView &v : (*exec)->outputs()) {
    std::vector<float> out(static_cast<size_t>(v.numel()));
    for (int64_t i = 0; i < v.numel(); ++i)
      out[i] = v.dtype == DType::kBF16  ? kernels::BFloat16ToFloat(v.as<uint16_t>()[i])
               : v.dtype == DType::kF16 ? kernels::HalfToFloat(v.as<uint16_t>()[i])
                                        : v.as<float>()[i];
    r.outputs.push_back(std::move(out));
  }
  return r;
}

// `x` [rows, k] in f32.
Result RunPlan(TestPlan p, const std::string &name, std::vector<float> x, int64_t rows, int64_t k,
               bool packing) {
  return RunPlanOn(std::move(p), name, TensorView{DType::kF32, {rows, k}, x.data()}, packing);
}

void ExpectSameOutputs(const Result &a, const Result &b) {
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    ASSERT_EQ(a.outputs[i].size(), b.outputs[i].size());
    for (size_t j = 0; j < a.outputs[i].size(); ++j)
      ASSERT_NEAR(a.outputs[i][j], b.outputs[i][j], 1e-4f) << "output " << i << " at " << j;
  }
}

// Bit patterns of `v` as `dt` (bf16 or f16, round to nearest even).
std::vector<uint16_t> ToHalf(const std::vector<float> &v, DType dt) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = dt == DType::kF16 ? kernels::FloatToHalf(v[i]) : kernels::FloatToBFloat16(v[i]);
  return out;
}
std::vector<uint16_t> ToBf16(const std::vector<float> &v) { return ToHalf(v, DType::kBF16); }
using kernels::BFloat16ToFloat;

// One product of each kind that reads a weight as its right operand:
// matmul, linear with bias, gemm with transB, and a gated MLP (two weights);
// every tensor of type `dt` (f32, or bf16 or f16 as a half plan has them).
// `bf16_values`: f32 weights whose values are bf16's (a bf16 checkpoint
// exported in f32).
TestPlan Products(int64_t k, int64_t n, int64_t f, DType dt = DType::kF32,
                  bool bf16_values = false) {
  TestPlan p;
  const auto weight = [&](const char *name, std::vector<DimSpec> dims, int64_t count,
                          uint32_t seed) {
    std::vector<float> v = Random(count, seed);
    if (bf16_values)
      for (float &x : v)
        x = BFloat16ToFloat(kernels::FloatToBFloat16(x));
    return dt == DType::kF32 ? p.Weight(name, dt, std::move(dims), v)
                             : p.Weight(name, dt, std::move(dims), ToHalf(v, dt));
  };
  const int ki = static_cast<int>(k), ni = static_cast<int>(n), fi = static_cast<int>(f);
  int x = p.Input("x", dt, {"rows", ki});
  int wm = weight("wm", {ki, ni}, k * n, 1);
  int wl = weight("wl", {ki, ni}, k * n, 2);
  int bl = weight("bl", {ni}, n, 3);
  int wt = weight("wt", {ni, ki}, n * k, 4);
  int wgu = weight("wgu", {ki, 2 * fi}, k * 2 * f, 5);
  int wd = weight("wd", {fi, ni}, f * n, 6);
  const std::vector<DimSpec> rn = {"rows", ni};
  int ym = p.Act("ym", dt, rn), yl = p.Act("yl", dt, rn);
  int yt = p.Act("yt", dt, rn), yg = p.Act("yg", dt, rn);
  p.Op("matmul", {x, wm}, {ym});
  p.Op("linear", {x, wl, bl}, {yl}, {AString("activation", "silu")});
  p.Op("gemm", {x, wt}, {yt}, {AInt("transB", 1)});
  p.Op("gated_mlp", {x, wgu, wd}, {yg}, {AString("activation", "silu")});
  for (int y : {ym, yl, yt, yg})
    p.Output(y);
  return p;
}

TEST(ExecutorPacking, EveryProductWeightIsPackedAndGivesTheSameNumbers) {
  const int64_t rows = 5, k = 37, n = 70, f = 20;
  std::vector<float> x = Random(rows * k, 9);
  Result on = RunPlan(Products(k, n, f), "pack_on.plan", x, rows, k, true);
  Result off = RunPlan(Products(k, n, f), "pack_off.plan", x, rows, k, false);
  // wm, wl, wt, wgu, wd; not the bias, which no product reads as B.
  EXPECT_EQ(on.stats.packed_weights, 5);
  EXPECT_EQ(on.stats.released_weights, 5);
  EXPECT_EQ(on.stats.narrowed_weights, 0); // random f32 values: none fits a half type
  // Panels of 64 columns: n = 70 -> 2 panels, 2f = 40 -> 1 panel.
  const uint64_t panel = 64 * sizeof(float);
  EXPECT_EQ(on.stats.packed_bytes, panel * (2 * k * 3 + 1 * k + 2 * f));
  EXPECT_EQ(off.stats.packed_weights, 0);
  EXPECT_EQ(off.stats.packed_bytes, 0u);
  ExpectSameOutputs(on, off);
}

// A moe op's expert weights: each expert's matrix packed on its own (4
// experts x 2 weights), both tensors' pages released (the op is their only
// reader), and the same numbers as unpacked, for a decode row and a batch.
TEST(ExecutorPacking, EveryExpertMatrixIsPacked) {
  const int64_t h = 24, e = 4, f = 10;
  for (int64_t rows : {1, 9}) {
    auto plan = [&] {
      TestPlan p;
      const int hi = static_cast<int>(h), ei = static_cast<int>(e), fi = static_cast<int>(f);
      int x = p.Input("x", DType::kF32, {"rows", hi});
      int wr = p.Weight("router", DType::kF32, {hi, ei}, Random(h * e, 11));
      int wgu = p.Weight("wgu", DType::kF32, {ei, hi, 2 * fi}, Random(e * h * 2 * f, 12));
      int wd = p.Weight("wd", DType::kF32, {ei, fi, hi}, Random(e * f * h, 13));
      int y = p.Act("y", DType::kF32, {"rows", hi});
      p.Op("moe", {x, wr, wgu, wd}, {y},
           {AInt("top_k", 2), AInt("normalize", 1), AString("activation", "silu")});
      p.Output(y);
      return p;
    };
    std::vector<float> x = Random(rows * h, 14);
    Result on = RunPlan(plan(), "moe_pack_on.plan", x, rows, h, true);
    Result off = RunPlan(plan(), "moe_pack_off.plan", x, rows, h, false);
    EXPECT_EQ(on.stats.packed_weights, 2);
    EXPECT_EQ(on.stats.released_weights, 2);
    // Panels of 64 columns: 2f = 20 and h = 24 each fit one.
    const uint64_t panel = 64 * sizeof(float);
    EXPECT_EQ(on.stats.packed_bytes, panel * e * (h + f));
    ExpectSameOutputs(on, off);
  }
}

// Half expert weights: each expert matrix packed half (2 tensors held, the
// f32 widening skipped), the same numbers as the widened run.
TEST(ExecutorPacking, HalfExpertWeightsStayHalf) {
  const int64_t h = 24, e = 4, f = 10, rows = 3;
  for (DType dt : {DType::kBF16, DType::kF16}) {
    auto plan = [&] {
      TestPlan p;
      const int hi = static_cast<int>(h), ei = static_cast<int>(e), fi = static_cast<int>(f);
      int x = p.Input("x", dt, {"rows", hi});
      int wr = p.Weight("router", dt, {hi, ei}, ToHalf(Random(h * e, 21), dt));
      int wgu = p.Weight("wgu", dt, {ei, hi, 2 * fi}, ToHalf(Random(e * h * 2 * f, 22), dt));
      int wd = p.Weight("wd", dt, {ei, fi, hi}, ToHalf(Random(e * f * h, 23), dt));
      int y = p.Act("y", dt, {"rows", hi});
      p.Op("moe", {x, wr, wgu, wd}, {y},
           {AInt("top_k", 2), AInt("normalize", 0), AString("activation", "gelu")});
      p.Output(y);
      return p;
    };
    const std::vector<uint16_t> x = ToHalf(Random(rows * h, 24), dt);
    const TensorView xv{dt, {rows, h}, const_cast<uint16_t *>(x.data())};
    Result on = RunPlanOn(plan(), "moe_half_on.plan", xv, true);
    Result off = RunPlanOn(plan(), "moe_half_off.plan", xv, false);
    EXPECT_EQ(on.stats.packed_weights, 2);
    EXPECT_EQ(on.stats.packed_bytes, 64u * 2u * static_cast<uint64_t>(e * (h + f)));
    ExpectSameOutputs(on, off);
  }
}

TEST(ExecutorPacking, OneRowAndManyRowsAgree) {
  for (int64_t rows : {1, 70}) {
    std::vector<float> x = Random(rows * 16, 11);
    Result on = RunPlan(Products(16, 130, 8), "pack_rows_on.plan", x, rows, 16, true);
    Result off = RunPlan(Products(16, 130, 8), "pack_rows_off.plan", x, rows, 16, false);
    EXPECT_EQ(on.stats.packed_weights, 5);
    ExpectSameOutputs(on, off);
  }
}

// Sets exact narrowing for one scope and restores the default (on) after.
class Narrowing {
public:
  explicit Narrowing(bool on) { SetCpuExactNarrowing(on); }
  ~Narrowing() { SetCpuExactNarrowing(true); }
};

// f32 weights holding bf16 values (a bf16 checkpoint exported in f32) are
// packed in bf16, half the bytes, and every product gives bit for bit what
// the f32 packing gives, for one row and for many; the bias, which no
// product reads as B, stays as it is.
TEST(ExecutorPacking, F32WeightsOfBf16ValuesPackInBf16WithTheSameBits) {
  const int64_t k = 37, n = 70, f = 20;
  for (int64_t rows : {1, 5, 16}) {
    std::vector<float> x = Random(rows * k, 31);
    Result narrow =
        RunPlan(Products(k, n, f, DType::kF32, true), "narrow_on.plan", x, rows, k, true);
    Result wide;
    {
      Narrowing off(false);
      wide = RunPlan(Products(k, n, f, DType::kF32, true), "narrow_off.plan", x, rows, k, true);
    }
    EXPECT_EQ(narrow.stats.packed_weights, 5);
    EXPECT_EQ(narrow.stats.narrowed_weights, 5);
    EXPECT_EQ(wide.stats.narrowed_weights, 0);
    const uint64_t panel_bytes = 64 * k * 3 * 2 + 64 * k + 64 * 2 * f; // f32 sizes / 4
    EXPECT_EQ(narrow.stats.packed_bytes, panel_bytes * 2);
    EXPECT_EQ(wide.stats.packed_bytes, panel_bytes * 4);
    ASSERT_EQ(narrow.outputs.size(), wide.outputs.size());
    for (size_t i = 0; i < narrow.outputs.size(); ++i)
      ASSERT_EQ(narrow.outputs[i], wide.outputs[i]) << "rows " << rows << " output " << i;
  }
}

// A weight that another op also reads is packed for the product, and its
// plan pages stay (the other op reads them); a gemm with transA reads its B
// through BLAS, so its weight is not packed at all.
TEST(ExecutorPacking, WeightsReadElsewhereKeepTheirPages) {
  TestPlan p;
  int x = p.Input("x", DType::kF32, {"rows", 4});
  int w = p.Weight("w", DType::kF32, {4, 4}, Random(16, 7));
  int wa = p.Weight("wa", DType::kF32, {4, 4}, Random(16, 8));
  int y = p.Act("y", DType::kF32, {"rows", 4});
  int sq = p.Act("sq", DType::kF32, {4, 4});
  int ta = p.Act("ta", DType::kF32, {4, 4});
  p.Op("matmul", {x, w}, {y});
  p.Op("mul", {w, w}, {sq});
  p.Op("gemm", {wa, wa}, {ta}, {AInt("transA", 1)});
  for (int t : {y, sq, ta})
    p.Output(t);
  std::vector<float> xv = Random(3 * 4, 12);
  Result on = RunPlan(p, "pack_shared.plan", xv, 3, 4, true);
  EXPECT_EQ(on.stats.packed_weights, 1);
  EXPECT_EQ(on.stats.released_weights, 0);
  Result off = RunPlan(p, "pack_shared_off.plan", xv, 3, 4, false);
  ExpectSameOutputs(on, off);
}

// Half weights packed in their own type (half the bytes of f32) give what
// widening them gave, for one row (decode) and many (a prompt; the 6-row
// tiles and their tails), in bf16 and f16 plans: each result within one
// half rounding of the unpacked one (the f32 sums differ only in order,
// then both round to the half type).
TEST(ExecutorPacking, HalfWeightsStayHalfAndGiveTheSameNumbers) {
  const int64_t k = 37, n = 70, f = 20;
  for (DType dt : {DType::kBF16, DType::kF16})
    for (int64_t rows : {1, 5, 16}) {
      std::vector<uint16_t> x = ToHalf(Random(rows * k, 13), dt);
      const TensorView xv{dt, {rows, k}, x.data()};
      Result on = RunPlanOn(Products(k, n, f, dt), "pack_half_on.plan", xv, true);
      Result off = RunPlanOn(Products(k, n, f, dt), "pack_half_off.plan", xv, false);
      // wm, wl, wgu and wd; not wt (a gemm's B stays half in the plan, widened).
      EXPECT_EQ(on.stats.packed_weights, 4);
      EXPECT_EQ(on.stats.released_weights, 4);
      const uint64_t panel = 64 * sizeof(uint16_t);
      EXPECT_EQ(on.stats.packed_bytes, panel * (2 * k * 2 + 1 * k + 2 * f));
      EXPECT_EQ(off.stats.packed_weights, 0);
      const float tol = dt == DType::kF16 ? 2e-3f : 1e-2f;
      ASSERT_EQ(on.outputs.size(), off.outputs.size());
      for (size_t i = 0; i < on.outputs.size(); ++i) {
        ASSERT_EQ(on.outputs[i].size(), off.outputs[i].size());
        for (size_t j = 0; j < on.outputs[i].size(); ++j) {
          const float a = on.outputs[i][j], b = off.outputs[i][j];
          ASSERT_NEAR(a, b, tol * (1.0f + std::fabs(b)))
              << DTypeName(dt) << " rows " << rows << " output " << i << " at " << j;
        }
      }
    }
}

// What WithHalfViaF32 hands the f32 kernel for a bf16 weight: the weight
// itself, labelled f32, while a bf16 packed copy of it is held and its
// position is listed; a widened f32 copy otherwise (not held, or not a
// listed position). The activation is always widened.
TEST(ExecutorPacking, HalfWrapperPassesPackedBf16WeightsUnwidened) {
  const int64_t k = 8, n = 70;
  std::vector<uint16_t> x = ToBf16(Random(2 * k, 21)), w = ToBf16(Random(k * n, 22));
  std::vector<uint16_t> y(2 * n);
  const TensorView xv{DType::kBF16, {2, k}, x.data()}, wv{DType::kBF16, {k, n}, w.data()};
  // The views as the kernel saw them, and the weight's first values read
  // during the call (a widened copy is freed when the wrapper returns).
  TensorView seen_x, seen_w;
  std::vector<float> seen_values;
  KernelFn probe = [&](ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
    seen_x = *in[0];
    seen_w = *in[1];
    seen_values.assign(in[1]->as<const float>(), in[1]->as<const float>() + 8);
    std::fill(out[0].as<float>(), out[0].as<float>() + out[0].numel(), 0.0f);
    return Status::Ok();
  };
  ExecContext ctx;
  OpAttrs attrs;
  Outputs out = {TensorView{DType::kBF16, {2, n}, y.data()}};
  const auto call = [&](const KernelFn &fn) { ASSERT_TRUE(fn(ctx, attrs, {&xv, &wv}, out).ok()); };
  auto held = kernels::AcquirePackedHalf(w.data(), k, n, n, false, kernels::PackedElem::kBF16);
  ASSERT_TRUE(held);
  call(cpu::WithHalfViaF32(probe, {1}));
  EXPECT_EQ(seen_w.data, w.data());
  EXPECT_EQ(seen_w.dtype, DType::kF32);
  EXPECT_NE(seen_x.data, x.data());
  EXPECT_EQ(seen_x.dtype, DType::kF32);
  call(cpu::WithHalfViaF32(probe, {}));
  EXPECT_NE(seen_w.data, w.data());
  EXPECT_EQ(seen_values[3], BFloat16ToFloat(w[3]));
  held.reset();
  call(cpu::WithHalfViaF32(probe, {1}));
  EXPECT_NE(seen_w.data, w.data());
  EXPECT_EQ(seen_values[5], BFloat16ToFloat(w[5]));
}

} // namespace
} // namespace kiln
