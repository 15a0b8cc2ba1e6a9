// Fused normalization and MLP ops (docs/fused-ops.md) against naive
// double-precision references: rms_norm, add_rms_norm, add_layer_norm, gelu,
// linear and gated_mlp, plus f16/bf16 through half_via_f32.
#include "fused_test_util.h"

#include <cmath>

namespace kiln::test {
namespace {

// Rows of x viewed as [rows, D].
int64_t RowsOf(const Shape &s) { return s.back() == 0 ? 0 : NumElements(s) / s.back(); }

// RMS norm of each row of `x` (double), with |result| as the magnitude.
std::vector<double> NaiveRmsNorm(const std::vector<double> &x, const Tensor &scale, int64_t d,
                                 double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r * d < x.size(); ++r) {
    double ss = 0;
    for (int64_t c = 0; c < d; ++c)
      ss += x[r * d + c] * x[r * d + c];
    const double inv = 1.0 / std::sqrt(ss / d + eps);
    for (int64_t c = 0; c < d; ++c)
      y[r * d + c] = x[r * d + c] * inv * At(scale, c);
  }
  return y;
}

std::vector<double> AsDoubles(const Tensor &t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    v[i] = At(t, i);
  return v;
}

TEST(FusedRmsNorm, MatchesReference) {
  std::mt19937 rng(101);
  for (int trial = 0; trial < 30; ++trial) {
    Shape s = RandomShape(rng, 1, 4, 5);
    s.back() = std::uniform_int_distribution<int64_t>(1, 300)(rng); // odd and long rows
    Tensor x = Random<float>(s, rng, -3, 3);
    Tensor scale = Random<float>({s.back()}, rng, -2, 2);
    const float eps = trial % 2 ? 1e-6f : 1e-2f;
    auto got = RunOp("rms_norm", Attrs().Float("epsilon", eps), {&x, &scale});
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ((*got)[0].shape, s);
    ExpectClose((*got)[0], NaiveRmsNorm(AsDoubles(x), scale, s.back(), eps), "rms_norm");
  }
  // Long rows with an offset: the sum of squares must stay accurate.
  Tensor x = Random<float>({2, 8192}, rng, 5, 9), scale = Random<float>({8192}, rng);
  auto got = RunOp("rms_norm", Attrs().Float("epsilon", 1e-6f), {&x, &scale});
  ASSERT_TRUE(got.ok()) << got.status().message();
  ExpectClose((*got)[0], NaiveRmsNorm(AsDoubles(x), scale, 8192, 1e-6), "rms_norm long rows");
}

TEST(FusedAddRmsNorm, SumAndNormMatchReference) {
  std::mt19937 rng(102);
  for (int trial = 0; trial < 30; ++trial) {
    Shape s = RandomShape(rng, 1, 3, 6);
    s.back() = std::uniform_int_distribution<int64_t>(1, 200)(rng);
    Tensor a = Random<float>(s, rng), b = Random<float>(s, rng);
    Tensor scale = Random<float>({s.back()}, rng);
    // A large epsilon on some trials so that dropping it shows.
    const float eps = trial % 2 ? 1e-5f : 0.25f;
    auto got = RunOp("add_rms_norm", Attrs().Float("epsilon", eps), {&a, &b, &scale}, 2);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ((*got)[0].shape, s);
    ASSERT_EQ((*got)[1].shape, s);
    std::vector<double> sum(static_cast<size_t>(a.numel()));
    for (int64_t i = 0; i < a.numel(); ++i)
      sum[i] = At(a, i) + At(b, i);
    ExpectClose((*got)[0], sum, "add_rms_norm sum");
    ExpectClose((*got)[1], NaiveRmsNorm(sum, scale, s.back(), eps), "add_rms_norm y");
  }
}

TEST(FusedAddLayerNorm, WithAndWithoutBias) {
  std::mt19937 rng(103);
  for (int trial = 0; trial < 40; ++trial) {
    Shape s = RandomShape(rng, 1, 3, 6);
    s.back() = std::uniform_int_distribution<int64_t>(1, 150)(rng);
    const int64_t d = s.back();
    Tensor a = Random<float>(s, rng, -1, 3), b = Random<float>(s, rng);
    Tensor scale = Random<float>({d}, rng), bias = Random<float>({d}, rng);
    const bool with_bias = trial % 2 == 0;
    std::vector<const Tensor *> in = {&a, &b, &scale};
    if (with_bias)
      in.push_back(&bias);
    const float eps = trial % 4 < 2 ? 1e-5f : 0.1f;
    auto got = RunOp("add_layer_norm", Attrs().Float("epsilon", eps), in, 2);
    ASSERT_TRUE(got.ok()) << got.status().message();
    std::vector<double> sum(static_cast<size_t>(a.numel())), y(sum.size()), mag(sum.size());
    for (int64_t i = 0; i < a.numel(); ++i)
      sum[i] = At(a, i) + At(b, i);
    for (int64_t r = 0; r < RowsOf(s); ++r) {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < d; ++c)
        mean += sum[r * d + c] / d;
      for (int64_t c = 0; c < d; ++c)
        var += (sum[r * d + c] - mean) * (sum[r * d + c] - mean) / d;
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t c = 0; c < d; ++c) {
        const int64_t i = r * d + c;
        const double bc = with_bias ? At(bias, c) : 0.0;
        y[i] = (sum[i] - mean) * inv * At(scale, c) + bc;
        // Subtracting the mean cancels; its rounding scales with |mean|.
        mag[i] = (std::fabs(sum[i] - mean) + std::fabs(mean)) * inv * std::fabs(At(scale, c)) +
                 std::fabs(bc);
      }
    }
    ExpectClose((*got)[0], sum, "add_layer_norm sum");
    ExpectClose((*got)[1], y, mag, with_bias ? "add_layer_norm y (bias)" : "add_layer_norm y");
  }
}

// act(v) in double, by the contract's formulas.
TEST(FusedGelu, ErfAndTanhForms) {
  std::mt19937 rng(104);
  for (const char *approx : {"none", "tanh"}) {
    // Long enough to cross several internal chunks; wide enough for both tails.
    Tensor x = Random<float>({3, 701}, rng, -7, 7);
    x.data<float>()[0] = 0.0f;
    auto got = RunOp("gelu", Attrs().String("approximate", approx), {&x});
    ASSERT_TRUE(got.ok()) << got.status().message();
    std::vector<double> want(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i)
      want[i] = NaiveAct(std::string(approx) == "none" ? "gelu" : "gelu_tanh", At(x, i));
    ExpectClose((*got)[0], want, std::string("gelu ") + approx);
  }
  // NaN passes through; the far tails are 0 and x.
  Tensor special = Make<float>({4}, {std::nanf(""), -30.0f, 30.0f, -0.0f});
  for (const char *approx : {"none", "tanh"}) {
    auto got = RunOp("gelu", Attrs().String("approximate", approx), {&special});
    ASSERT_TRUE(got.ok()) << got.status().message();
    const float *y = (*got)[0].data<float>();
    EXPECT_TRUE(std::isnan(y[0])) << approx;
    EXPECT_LE(std::fabs(y[1]), 1e-30f) << approx;
    EXPECT_EQ(y[2], 30.0f) << approx;
    EXPECT_EQ(y[3], 0.0f) << approx;
  }
}

TEST(FusedLinear, EveryActivationWithAndWithoutBias) {
  std::mt19937 rng(105);
  int trial = 0;
  for (const char *act : {"none", "relu", "gelu", "gelu_tanh", "silu"}) {
    for (bool with_bias : {false, true}) {
      // Rank 1 (a single row: the GEMV path), 2 and 3.
      Shape xs = RandomShape(rng, 1 + trial % 3, 1 + trial % 3, 5);
      ++trial;
      const int64_t k = std::uniform_int_distribution<int64_t>(1, 70)(rng);
      const int64_t n = std::uniform_int_distribution<int64_t>(1, 40)(rng);
      xs.back() = k;
      Tensor x = Random<float>(xs, rng, -1, 1), w = Random<float>({k, n}, rng, -1, 1);
      Tensor bias = Random<float>({n}, rng);
      std::vector<const Tensor *> in = {&x, &w};
      if (with_bias)
        in.push_back(&bias);
      auto got = RunOp("linear", Attrs().String("activation", act), in);
      ASSERT_TRUE(got.ok()) << got.status().message();
      Shape want_shape = xs;
      want_shape.back() = n;
      ASSERT_EQ((*got)[0].shape, want_shape);
      const int64_t rows = RowsOf(xs);
      std::vector<double> want(static_cast<size_t>(rows * n)), mag(want.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) {
          double acc = with_bias ? At(bias, j) : 0.0, m = std::fabs(acc);
          for (int64_t i = 0; i < k; ++i) {
            acc += At(x, r * k + i) * At(w, i * n + j);
            m += std::fabs(At(x, r * k + i) * At(w, i * n + j));
          }
          want[r * n + j] = NaiveAct(act, acc);
          mag[r * n + j] = m + std::fabs(want[r * n + j]);
        }
      ExpectClose((*got)[0], want, mag, std::string("linear ") + act);
    }
  }
}

TEST(FusedGatedMlp, SiluGeluAndTanhGelu) {
  std::mt19937 rng(106);
  int trial = 0;
  for (const char *act : {"silu", "gelu", "gelu_tanh"}) {
    // 300 rows also crosses the kernel's row blocks; 1 row takes the GEMV path.
    for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{300}}) {
      const int64_t k = 8 + trial * 3 % 40, f = 5 + trial * 7 % 33, n = 3 + trial * 5 % 21;
      ++trial;
      Tensor x = Random<float>({rows, k}, rng, -1, 1);
      Tensor wgu = Random<float>({k, 2 * f}, rng, -1, 1), wd = Random<float>({f, n}, rng, -1, 1);
      auto got = RunOp("gated_mlp", Attrs().String("activation", act), {&x, &wgu, &wd});
      ASSERT_TRUE(got.ok()) << got.status().message();
      ASSERT_EQ((*got)[0].shape, (Shape{rows, n}));
      std::vector<double> want, mag;
      NaiveGatedMlp(
          x, rows, k, f, n, act, [&](int64_t i, int64_t j) { return At(wgu, i * 2 * f + j); },
          [&](int64_t j, int64_t c) { return At(wd, j * n + c); }, want, mag);
      ExpectClose((*got)[0], want, mag, std::string("gated_mlp ") + act);
    }
  }
}

// f16/bf16 operands: the op must equal the f32 op on the widened operands,
// rounded once, and stay close to the double reference.
TEST(FusedHalf, RmsNormAndLinearInF16AndBF16) {
  std::mt19937 rng(107);
  for (DType half : {DType::kF16, DType::kBF16}) {
    Tensor x = ToHalf(Random<float>({4, 96}, rng), half);
    Tensor scale = ToHalf(Random<float>({96}, rng), half);
    Tensor xf = ToF32(x), sf = ToF32(scale);
    auto got = RunOp("rms_norm", Attrs().Float("epsilon", 1e-6f), {&x, &scale});
    auto ref = RunOp("rms_norm", Attrs().Float("epsilon", 1e-6f), {&xf, &sf});
    ASSERT_TRUE(got.ok() && ref.ok()) << got.status().message();
    ASSERT_EQ((*got)[0].dtype, half);
    EXPECT_EQ((*got)[0].bytes, ToHalf((*ref)[0], half).bytes);
    const std::vector<double> want = NaiveRmsNorm(AsDoubles(xf), sf, 96, 1e-6);
    const Tensor wide = ToF32((*got)[0]);
    const double rel = half == DType::kF16 ? 1e-3 : 8e-3;
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(At(wide, i), want[i], rel * std::fabs(want[i]) + 1e-6) << i;

    Tensor lx = ToHalf(Random<float>({3, 16}, rng, -1, 1), half);
    Tensor lw = ToHalf(Random<float>({16, 8}, rng, -1, 1), half);
    Tensor lxf = ToF32(lx), lwf = ToF32(lw);
    auto lg = RunOp("linear", Attrs().String("activation", "silu"), {&lx, &lw});
    auto lr = RunOp("linear", Attrs().String("activation", "silu"), {&lxf, &lwf});
    ASSERT_TRUE(lg.ok() && lr.ok()) << lg.status().message();
    ASSERT_EQ((*lg)[0].dtype, half);
    EXPECT_EQ((*lg)[0].bytes, ToHalf((*lr)[0], half).bytes);
  }
}

TEST(FusedNormErrors, BadShapesAttributesAndDTypes) {
  Tensor x = Make<float>({2, 4}, std::vector<float>(8, 1)), s3 = Make<float>({3}, {1, 1, 1});
  Tensor s4 = Make<float>({4}, {1, 1, 1, 1}), y = Make<float>({4, 2}, std::vector<float>(8, 1));
  Tensor xi = Make<int32_t>({2, 4}, std::vector<int32_t>(8, 1)), scalar = Make<float>({}, {1});
  std::vector<TensorView> one(1), two(2);
  const auto eps = Attrs().Float("epsilon", 1e-5f);
  ExpectError(InferOp("rms_norm", eps, {&x, &s3}, &one),
              {"rms_norm", "operand 'scale' must have shape [D] = [4], got [3]"});
  ExpectError(InferOp("rms_norm", Attrs(), {&x, &s4}, &one),
              {"rms_norm", "missing attribute 'epsilon'"});
  ExpectError(InferOp("rms_norm", eps, {&xi, &s4}, &one),
              {"rms_norm", "operand 'x' must be f32, f16 or bf16, got i32"});
  ExpectError(InferOp("rms_norm", eps, {&scalar, &s4}, &one), {"rms_norm", "rank >= 1"});
  ExpectError(InferOp("add_rms_norm", eps, {&x, &y, &s4}, &two),
              {"add_rms_norm", "operand 'b' must have shape a's shape = [2, 4], got [4, 2]"});
  ExpectError(InferOp("add_rms_norm", eps, {&x, &x, &s4}, &one),
              {"add_rms_norm", "expected 2 results"});
  ExpectError(InferOp("add_layer_norm", eps, {&x, &x, &s4, &s3}, &two),
              {"add_layer_norm", "operand 'bias' must have shape [D]"});
  ExpectError(InferOp("gelu", Attrs().String("approximate", "fast"), {&x}, &one),
              {"gelu", "unknown approximate 'fast'"});
  ExpectError(InferOp("gelu", Attrs().Int("approximate", 0), {&x}, &one),
              {"gelu", "attribute 'approximate' must be a string"});
}

TEST(FusedMlpErrors, BadShapesAndActivations) {
  Tensor x = Make<float>({2, 4}, std::vector<float>(8, 1));
  Tensor w43 = Make<float>({4, 3}, std::vector<float>(12, 1));
  Tensor w53 = Make<float>({5, 3}, std::vector<float>(15, 1));
  Tensor w46 = Make<float>({4, 6}, std::vector<float>(24, 1));
  Tensor w32 = Make<float>({3, 2}, std::vector<float>(6, 1));
  Tensor w22 = Make<float>({2, 2}, std::vector<float>(4, 1));
  Tensor b2 = Make<float>({2}, {1, 1});
  std::vector<TensorView> one(1);
  const auto none = Attrs().String("activation", "none");
  ExpectError(InferOp("linear", none, {&x, &w53}, &one),
              {"linear", "operand 'w' of shape [5, 3] must have K (x's last dim) = 4 rows"});
  ExpectError(InferOp("linear", none, {&x, &w43, &b2}, &one),
              {"linear", "operand 'bias' must have shape [N] = [3], got [2]"});
  ExpectError(InferOp("linear", Attrs().String("activation", "tanh"), {&x, &w43}, &one),
              {"linear", "unknown activation 'tanh'", "none, relu, gelu, gelu_tanh, silu"});
  ExpectError(InferOp("linear", Attrs(), {&x, &w43}, &one),
              {"linear", "missing attribute 'activation'"});
  const auto silu = Attrs().String("activation", "silu");
  ExpectError(InferOp("gated_mlp", silu, {&x, &w43, &w22}, &one),
              {"gated_mlp", "'w_gate_up' of shape [4, 3] must have an even number of columns"});
  ExpectError(InferOp("gated_mlp", silu, {&x, &w46, &w22}, &one),
              {"gated_mlp", "operand 'w_down' of shape [2, 2] must have F"});
  ExpectError(InferOp("gated_mlp", Attrs().String("activation", "relu"), {&x, &w46, &w32}, &one),
              {"gated_mlp", "unknown activation 'relu'", "silu, gelu, gelu_tanh"});
  std::vector<TensorView> ok(1);
  ASSERT_TRUE(InferOp("gated_mlp", silu, {&x, &w46, &w32}, &ok).ok());
  EXPECT_EQ(ok[0].shape, (Shape{2, 2}));
}

} // namespace
} // namespace kiln::test
