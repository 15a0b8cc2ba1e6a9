// The int8 projections (linear_q8, gated_mlp_q8: an int8 weight with one f32
// scale per column) against double-precision references over the dequantized
// weights: the widened path (no packed copy held) and the packed one (the
// executor's, here by holding AcquirePackedI8 of the same weight).
#include "fused_test_util.h"
#include "kernels/cpu/products_int8_gemm.h"
#include "kernels/cpu/products_packed_matrix.h"

#include <cmath>
#include <memory>

namespace kiln::test {
namespace {

// A random int8 weight [k, n] (the full range, -127..127) and its scales.
struct Int8Weight {
  Tensor q, scale;
  double At(int64_t r, int64_t c) const {
    return double(q.data<int8_t>()[r * q.shape[1] + c]) * scale.data<float>()[c];
  }
};

Int8Weight RandomInt8(int64_t k, int64_t n, std::mt19937 &rng) {
  Int8Weight w{Tensor(DType::kI8, {k, n}), Random<float>({n}, rng, 0.001, 0.05)};
  std::uniform_int_distribution<int> d(-127, 127);
  for (int64_t i = 0; i < k * n; ++i)
    w.q.data<int8_t>()[i] = static_cast<int8_t>(d(rng));
  return w;
}

// The packed form the executor would hold, for the products to find.
std::shared_ptr<const kernels::PackedMatrix> Hold(const Int8Weight &w) {
  return kernels::AcquirePackedI8(w.q.data<int8_t>(), w.scale.data<float>(), w.q.shape[0],
                                  w.q.shape[1], w.q.shape[1]);
}

TEST(FusedInt8, LinearQ8MatchesDequantizedReference) {
  std::mt19937 rng(301);
  int trial = 0;
  for (const char *act : {"none", "relu", "silu", "gelu"}) {
    for (bool with_bias : {false, true}) {
      for (bool packed : {false, true}) {
        // One row (decode), a few, and past the packed kernel's 64-row switch.
        const int64_t rows = trial % 3 == 0 ? 1 : trial % 3 == 1 ? 5 : 70;
        const int64_t k = 1 + (trial * 37) % 300, n = 1 + (trial * 29) % 150;
        ++trial;
        Tensor x = Random<float>({rows, k}, rng, -1, 1), bias = Random<float>({n}, rng);
        Int8Weight w = RandomInt8(k, n, rng);
        auto held = packed ? Hold(w) : nullptr;
        ASSERT_EQ(packed, held != nullptr);
        std::vector<const Tensor *> in = {&x, &w.q, &w.scale};
        if (with_bias)
          in.push_back(&bias);
        auto got = RunOp("linear_q8", Attrs().String("activation", act), in);
        ASSERT_TRUE(got.ok()) << got.status().message();
        ASSERT_EQ((*got)[0].shape, (Shape{rows, n}));
        std::vector<double> want(static_cast<size_t>(rows * n)), mag(want.size());
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < n; ++j) {
            double acc = with_bias ? At(bias, j) : 0.0, m = std::fabs(acc);
            for (int64_t i = 0; i < k; ++i) {
              acc += At(x, r * k + i) * w.At(i, j);
              m += std::fabs(At(x, r * k + i) * w.At(i, j));
            }
            want[r * n + j] = NaiveAct(act, acc);
            mag[r * n + j] = m + std::fabs(want[r * n + j]);
          }
        ExpectClose((*got)[0], want, mag,
                    std::string("linear_q8 ") + act + (packed ? " packed" : " widened"));
      }
    }
  }
}

TEST(FusedInt8, GatedMlpQ8MatchesDequantizedReference) {
  std::mt19937 rng(302);
  int trial = 0;
  for (const char *act : {"silu", "gelu"}) {
    for (int64_t rows : {int64_t{1}, int64_t{9}, int64_t{300}}) {
      for (bool packed : {false, true}) {
        const int64_t k = 8 + trial * 13 % 90, f = 5 + trial * 7 % 70, n = 3 + trial * 11 % 80;
        ++trial;
        Tensor x = Random<float>({rows, k}, rng, -1, 1);
        Int8Weight gu = RandomInt8(k, 2 * f, rng), down = RandomInt8(f, n, rng);
        auto held_gu = packed ? Hold(gu) : nullptr, held_down = packed ? Hold(down) : nullptr;
        auto got = RunOp("gated_mlp_q8", Attrs().String("activation", act),
                         {&x, &gu.q, &gu.scale, &down.q, &down.scale});
        ASSERT_TRUE(got.ok()) << got.status().message();
        ASSERT_EQ((*got)[0].shape, (Shape{rows, n}));
        std::vector<double> want, mag;
        NaiveGatedMlp(
            x, rows, k, f, n, act, [&](int64_t i, int64_t j) { return gu.At(i, j); },
            [&](int64_t j, int64_t c) { return down.At(j, c); }, want, mag);
        ExpectClose((*got)[0], want, mag,
                    std::string("gated_mlp_q8 ") + act + (packed ? " packed" : " widened"));
      }
    }
  }
}

// The product with int8 activations: each row of x quantized by
// kernels::QuantizeRows (tested in int8_gemm_test.cpp), then exact integer
// sums times the two scales. Packed (the executor's kI8x4 copy) and not.
TEST(FusedInt8, LinearQ8WithInt8ActivationsIsExactOverQuantizedRows) {
  std::mt19937 rng(303);
  int trial = 0;
  for (const char *act : {"none", "silu"}) {
    for (bool packed : {false, true}) {
      for (int64_t rows : {int64_t{1}, int64_t{6}, int64_t{70}}) {
        const int64_t k = 1 + (trial * 53) % 300, n = 1 + (trial * 31) % 150;
        ++trial;
        Tensor x = Random<float>({rows, k}, rng, -1, 1), bias = Random<float>({n}, rng);
        Int8Weight w = RandomInt8(k, n, rng);
        auto held =
            packed ? kernels::AcquirePackedI8x4(w.q.data<int8_t>(), w.scale.data<float>(), k, n, n)
                   : nullptr;
        ASSERT_EQ(packed, held != nullptr);
        auto got =
            RunOp("linear_q8", Attrs().String("activation", act).String("activations", "int8"),
                  {&x, &w.q, &w.scale, &bias});
        ASSERT_TRUE(got.ok()) << got.status().message();
        const int64_t kq = kernels::QuantizedDepth(k);
        std::vector<uint8_t> xq(static_cast<size_t>(rows * kq));
        std::vector<float> xs(static_cast<size_t>(rows));
        kernels::QuantizeRows(x.data<float>(), rows, k, k, xq.data(), xs.data());
        std::vector<double> want(static_cast<size_t>(rows * n)), mag(want.size());
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < n; ++j) {
            int64_t dot = 0, absdot = 0;
            for (int64_t i = 0; i < k; ++i) {
              const int64_t t = (int64_t(xq[r * kq + i]) - 128) * w.q.data<int8_t>()[i * n + j];
              dot += t;
              absdot += t < 0 ? -t : t;
            }
            const double s = double(xs[r]) * w.scale.data<float>()[j];
            want[r * n + j] = NaiveAct(act, s * double(dot) + At(bias, j));
            mag[r * n + j] =
                s * double(absdot) + std::fabs(At(bias, j)) + std::fabs(want[r * n + j]);
          }
        ExpectClose((*got)[0], want, mag,
                    std::string("linear_q8 int8 activations ") + act + (packed ? " packed" : ""));
      }
    }
  }
}

// gated_mlp_q8 with int8 activations quantizes x and the gated hidden rows:
// within their rounding (half a step of each row's max / 127 per element) of
// the f32-activation op, packed and not.
TEST(FusedInt8, GatedMlpQ8WithInt8ActivationsIsCloseToF32Activations) {
  std::mt19937 rng(304);
  for (int64_t rows : {int64_t{1}, int64_t{9}, int64_t{300}}) {
    for (bool packed : {false, true}) {
      const int64_t k = 64, f = 48, n = 40;
      Tensor x = Random<float>({rows, k}, rng, -1, 1);
      Int8Weight gu = RandomInt8(k, 2 * f, rng), down = RandomInt8(f, n, rng);
      auto held_gu = packed ? kernels::AcquirePackedI8x4(gu.q.data<int8_t>(),
                                                         gu.scale.data<float>(), k, 2 * f, 2 * f)
                            : nullptr;
      auto held_down = packed ? kernels::AcquirePackedI8x4(down.q.data<int8_t>(),
                                                           down.scale.data<float>(), f, n, n)
                              : nullptr;
      const std::vector<const Tensor *> in = {&x, &gu.q, &gu.scale, &down.q, &down.scale};
      auto f32 = RunOp("gated_mlp_q8", Attrs().String("activation", "silu"), in);
      auto int8 = RunOp("gated_mlp_q8",
                        Attrs().String("activation", "silu").String("activations", "int8"), in);
      ASSERT_TRUE(f32.ok() && int8.ok());
      const float *a = (*f32)[0].data<float>(), *b = (*int8)[0].data<float>();
      double max_ref = 0, max_diff = 0;
      for (int64_t i = 0; i < rows * n; ++i) {
        max_ref = std::max(max_ref, std::fabs(double(a[i])));
        max_diff = std::max(max_diff, std::fabs(double(a[i]) - b[i]));
      }
      EXPECT_GT(max_ref, 0.0);
      // Two per-row int8 roundings: a few percent of the output's range,
      // and never zero (the path must differ from f32 activations).
      EXPECT_LT(max_diff, 0.05 * max_ref) << rows << (packed ? " packed" : "");
      EXPECT_GT(max_diff, 0.0) << rows;
    }
  }
}

TEST(FusedInt8, ShapeRulesNameTheBadOperand) {
  Tensor x = Make<float>({2, 4}, std::vector<float>(8, 1));
  Tensor q43(DType::kI8, {4, 3}), q53(DType::kI8, {5, 3}), q46(DType::kI8, {4, 6});
  Tensor q32(DType::kI8, {3, 2}), q33(DType::kI8, {3, 3});
  Tensor s3 = Make<float>({3}, {1, 1, 1}), s2 = Make<float>({2}, {1, 1});
  Tensor s6 = Make<float>({6}, std::vector<float>(6, 1));
  Tensor f43 = Make<float>({4, 3}, std::vector<float>(12, 1));
  std::vector<TensorView> one(1);
  const auto none = Attrs().String("activation", "none");
  ExpectError(InferOp("linear_q8", none, {&x, &f43, &s3}, &one),
              {"linear_q8", "operand 'w'", "i8", "f32"});
  ExpectError(InferOp("linear_q8", none, {&x, &q53, &s3}, &one),
              {"linear_q8", "operand 'w' of shape [5, 3] must have K (x's last dim) = 4 rows"});
  ExpectError(InferOp("linear_q8", none, {&x, &q43, &s2}, &one),
              {"linear_q8", "'w's scale' must have shape [N] = [3], got [2]"});
  ExpectError(InferOp("linear_q8", none, {&x, &q43, &s3, &s2}, &one),
              {"linear_q8", "operand 'bias' must have shape [N] = [3], got [2]"});
  ExpectError(InferOp("linear_q8", none, {&x, &q43}, &one), {"linear_q8"});
  const auto silu = Attrs().String("activation", "silu");
  ExpectError(InferOp("gated_mlp_q8", silu, {&x, &q43, &s3, &q32, &s2}, &one),
              {"gated_mlp_q8", "'w_gate_up' of shape [4, 3] must have an even number of columns"});
  ExpectError(InferOp("gated_mlp_q8", silu, {&x, &q46, &s6, &q33, &s2}, &one),
              {"gated_mlp_q8", "'w_down's scale' must have shape [N] = [3], got [2]"});
  std::vector<TensorView> ok(1);
  ASSERT_TRUE(InferOp("gated_mlp_q8", silu, {&x, &q46, &s6, &q32, &s2}, &ok).ok());
  EXPECT_EQ(ok[0].shape, (Shape{2, 2}));
  ASSERT_TRUE(InferOp("linear_q8", none, {&x, &q43, &s3, &s3}, &ok).ok());
  EXPECT_EQ(ok[0].shape, (Shape{2, 3}));
  ExpectError(InferOp("linear_q8",
                      Attrs().String("activation", "none").String("activations", "int4"),
                      {&x, &q43, &s3}, &one),
              {"linear_q8", "unknown activations 'int4'", "f32 or int8"});
}

TEST(FusedInt8, DequantizeColumnsIsQTimesScale) {
  const int8_t q[6] = {127, -127, 0, 1, -1, 64};
  const float scale[3] = {0.5f, 2.0f, 0.0f};
  float out[6];
  kernels::DequantizeColumns(q, scale, 2, 3, out);
  const float want[6] = {63.5f, -254.0f, 0.0f, 0.5f, -2.0f, 0.0f};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(out[i], want[i]) << i;
}

} // namespace
} // namespace kiln::test
