// MatMul (numpy semantics, batched broadcasting, 1-D operands) and Gemm
// against naive triple loops.
#include "kernels/cpu/products_gemm.h"
#include "test_util.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace kiln::test {
namespace {

// Naive numpy matmul of a and b (any ranks >= 1).
std::vector<double> NaiveMatMul(const Tensor &a, const Tensor &b, Shape *out_shape) {
  Shape sa = a.shape, sb = b.shape;
  const bool av = sa.size() == 1, bv = sb.size() == 1;
  if (av)
    sa.insert(sa.begin(), 1);
  if (bv)
    sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), bo;
  EXPECT_TRUE(NaiveBroadcast(ba, bb, &bo));
  std::vector<double> out(static_cast<size_t>(NumElements(bo) * m * n));
  for (int64_t bi = 0; bi < NumElements(bo); ++bi) {
    const auto idx = Unravel(bi, bo);
    const int64_t oa = BroadcastIndex(idx, ba) * m * k, ob = BroadcastIndex(idx, bb) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += double(a.data<float>()[oa + i * k + p]) * b.data<float>()[ob + p * n + j];
        out[(bi * m + i) * n + j] = s;
      }
  }
  *out_shape = bo;
  if (!av)
    out_shape->push_back(m);
  if (!bv)
    out_shape->push_back(n);
  return out;
}

void ExpectClose(const Tensor &got, const std::vector<double> &want, double tol) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
}

TEST(MatMul, RandomBatchedShapesWithBroadcasting) {
  std::mt19937 rng(21);
  for (int trial = 0; trial < 120; ++trial) {
    const int64_t m = 1 + rng() % 6, k = rng() % 7, n = 1 + rng() % 6;
    const Shape batch = RandomShape(rng, 0, 3, 3);
    Shape ba = BroadcastableTo(batch, rng), bb = BroadcastableTo(batch, rng);
    if (trial % 4 == 0)
      bb.clear(); // 2-D weight: the one-GEMM fast path
    if (trial % 5 == 0)
      ba = batch;
    Shape sa = ba, sb = bb;
    sa.insert(sa.end(), {m, k});
    sb.insert(sb.end(), {k, n});
    if (trial % 9 == 0)
      sa = {k}; // 1-D operands are promoted
    if (trial % 11 == 0)
      sb = {k};
    Tensor a = Random<float>(sa, rng), b = Random<float>(sb, rng);
    auto got = RunOp("matmul", Attrs(), {&a, &b});
    ASSERT_TRUE(got.ok()) << got.status().message();
    Shape want_shape;
    const auto want = NaiveMatMul(a, b, &want_shape);
    ASSERT_EQ((*got)[0].shape, want_shape) << ShapeToString(sa) << " x " << ShapeToString(sb);
    ExpectClose((*got)[0], want, 1e-5);
  }
}

TEST(MatMul, DecodeAndPrefillSizes) {
  // A single row (GEMV path) and a larger flattened-rows GEMM, as in decoders.
  std::mt19937 rng(22);
  for (Shape sa : {Shape{1, 1, 64}, Shape{2, 17, 64}}) {
    Tensor a = Random<float>(sa, rng), w = Random<float>({64, 96}, rng);
    auto got = RunOp("matmul", Attrs(), {&a, &w});
    ASSERT_TRUE(got.ok());
    Shape s;
    ExpectClose((*got)[0], NaiveMatMul(a, w, &s), 1e-5);
  }
}

TEST(MatMul, F64AndErrors) {
  Tensor a = Make<double>({2, 2}, {1, 2, 3, 4}), b = Make<double>({2}, {1, 1});
  auto got = RunOp("matmul", Attrs(), {&a, &b});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].shape, Shape{2});
  EXPECT_EQ((*got)[0].values<double>(), (std::vector<double>{3, 7}));
  std::vector<TensorView> out(1);
  Tensor x = Make<float>({2, 3}, std::vector<float>(6)),
         y = Make<float>({4, 2}, std::vector<float>(8));
  ExpectError(InferOp("matmul", Attrs(), {&x, &y}, &out),
              {"matmul", "inner dimensions", "[2, 3]", "[4, 2]"});
  Tensor s = Make<float>({}, {1});
  ExpectError(InferOp("matmul", Attrs(), {&s, &y}, &out), {"matmul", "rank >= 1"});
  Tensor ba = Make<float>({2, 1, 1}, {1, 1}), bb = Make<float>({3, 1, 1}, {1, 1, 1});
  ExpectError(InferOp("matmul", Attrs(), {&ba, &bb}, &out), {"matmul", "broadcast"});
  Tensor i = Make<int64_t>({1, 1}, {1});
  ExpectError(InferOp("matmul", Attrs(), {&i, &i}, &out), {"matmul", "f32", "i64"});
}

TEST(Gemm, TransposesAlphaBetaAndBroadcastC) {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 64; ++trial) {
    const int64_t m = 1 + rng() % 5, k = 1 + rng() % 5, n = 1 + rng() % 5;
    const bool ta = trial & 1, tb = trial & 2;
    Tensor a = Random<float>(ta ? Shape{k, m} : Shape{m, k}, rng);
    Tensor b = Random<float>(tb ? Shape{n, k} : Shape{k, n}, rng);
    const Shape c_shapes[] = {{m, n}, {n}, {1, n}, {m, 1}, {}, {1}};
    const Shape cs = c_shapes[(trial >> 2) % 6];
    Tensor c = Random<float>(cs, rng);
    const float alpha = 0.5f + trial % 3, beta = trial % 4 == 3 ? 0.0f : 0.25f;
    const bool with_c = trial % 8 != 7;
    auto got =
        RunOp("gemm",
              Attrs().Int("transA", ta).Int("transB", tb).Float("alpha", alpha).Float("beta", beta),
              {&a, &b, with_c ? &c : nullptr});
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ((*got)[0].shape, (Shape{m, n}));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += double(a.data<float>()[ta ? p * m + i : i * k + p]) *
               b.data<float>()[tb ? j * k + p : p * n + j];
        double want = alpha * s;
        if (with_c)
          want += beta * c.data<float>()[BroadcastIndex({i, j}, cs)];
        ASSERT_NEAR((*got)[0].data<float>()[i * n + j], want, 1e-5 * (1 + std::fabs(want)));
      }
  }
}

TEST(Gemm, Errors) {
  Tensor a = Make<float>({2, 3}, std::vector<float>(6)),
         b = Make<float>({2, 3}, std::vector<float>(6));
  Tensor c = Make<float>({3, 3}, std::vector<float>(9));
  std::vector<TensorView> out(1);
  ExpectError(InferOp("gemm", Attrs(), {&a, &b}, &out), {"gemm", "inner dimensions", "K=3", "K=2"});
  ExpectError(InferOp("gemm", Attrs().Int("transB", 1), {&a, &b, &c}, &out),
              {"gemm", "C of shape [3, 3]", "[2, 2]"});
  Tensor v = Make<float>({3}, std::vector<float>(3));
  ExpectError(InferOp("gemm", Attrs(), {&v, &b}, &out), {"gemm", "2-D"});
}

TEST(GemmKernel, ZeroBetaIgnoresGarbageAndZeroK) {
  // Output buffers come from a reused arena: NaN garbage must not leak.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {1, 2}, b = {3, 4}, c = {nan, nan};
  kernels::Gemm<float>(false, false, 1, 2, 1, 1.0f, a.data(), 1, b.data(), 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{3, 4}));
  std::vector<float> c2 = {nan, nan, nan, nan};
  kernels::Gemm<float>(false, false, 2, 2, 1, 1.0f, a.data(), 1, b.data(), 2, 0.0f, c2.data(), 2);
  EXPECT_EQ(c2, (std::vector<float>{3, 4, 6, 8}));
  std::vector<float> c3 = {nan, nan};
  kernels::Gemm<float>(false, false, 1, 2, 0, 1.0f, a.data(), 0, b.data(), 2, 0.0f, c3.data(), 2);
  EXPECT_EQ(c3, (std::vector<float>{0, 0}));
}

// The few-row path (SmallMGemm, AVX-512 when the CPU has it) against a plain
// double-precision product: every row count it takes, column counts around
// its 16- and 64-wide tiles, strided operands, alpha and beta.
TEST(GemmKernel, FewRowsMatchReference) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t m : {2, 3, 5, 6, 7, 12, 13, 16, 31, 32, 33})
    for (int64_t n : {1, 15, 16, 17, 63, 64, 65, 130})
      for (int64_t k : {1, 7, 64}) {
        const int64_t lda = k + 3, ldb = n + 5, ldc = n + 2;
        std::vector<float> a(m * lda), b(k * ldb), c(m * ldc);
        for (float &v : a) v = u(rng);
        for (float &v : b) v = u(rng);
        for (float &v : c) v = u(rng);
        const float alpha = 0.5f, beta = (n % 2) ? 0.0f : 2.0f;
        std::vector<float> before = c;
        if (beta == 0.0f) // beta 0 must ignore C, NaN included
          for (int64_t i = 0; i < m; ++i) c[i * ldc] = std::nanf("");
        kernels::Gemm<float>(false, false, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta,
                             c.data(), ldc);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double want = beta * double(before[i * ldc + j]);
            for (int64_t p = 0; p < k; ++p)
              want += alpha * double(a[i * lda + p]) * double(b[p * ldb + j]);
            ASSERT_NEAR(c[i * ldc + j], want, 1e-4 * (1 + k))
                << "m " << m << " n " << n << " k " << k << " at " << i << "," << j;
          }
          // Padding between rows of C is never written.
          for (int64_t j = n; j < ldc && i + 1 < m; ++j)
            ASSERT_EQ(c[i * ldc + j], before[i * ldc + j]) << "wrote past column n";
        }
      }
}

} // namespace
} // namespace kiln::test
