// Int8 x int8 products (kernels/cpu/products_int8_gemm.h): the kI8x4 packed layout,
// QuantizeRows, Int8Gemm (the VNNI path where this CPU has it),
// Int8GemmAvx2 and Int8GemmPortable against an exact integer reference, and
// the registry's AcquirePackedI8x4.
#include "kernels/cpu/products_int8_gemm.h"
#include "kernels/cpu/products_packed_matrix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace kiln::test {
namespace {

using kernels::kPanelCols;
using kernels::PackedElem;
using kernels::PackedMatrix;

struct Weight {
  std::vector<int8_t> q; // [k, ldb]
  std::vector<float> scales;
};

Weight RandomWeight(int64_t k, int64_t n, int64_t ldb, std::mt19937 &rng) {
  Weight w{std::vector<int8_t>(static_cast<size_t>(k * ldb)), std::vector<float>(n)};
  for (auto &x : w.q)
    x = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  std::uniform_real_distribution<float> u(0.001f, 0.1f);
  for (auto &s : w.scales)
    s = u(rng);
  return w;
}

// Every byte of a kI8x4 matrix at its documented offset, its zero padding,
// column sums and scales.
TEST(Int8Gemm, PackI8x4Layout) {
  std::mt19937 rng(3);
  const int64_t k = 7, n = 70, ldb = 73, groups = 2;
  const Weight w = RandomWeight(k, n, ldb, rng);
  auto packed = PackedMatrix::PackI8x4(w.q.data(), w.scales.data(), k, n, ldb);
  ASSERT_TRUE(packed);
  EXPECT_EQ(packed->elem(), PackedElem::kI8x4);
  EXPECT_EQ(packed->k(), k);
  EXPECT_EQ(packed->n(), n);
  ASSERT_EQ(packed->panels(), 2);
  EXPECT_EQ(packed->bytes(), size_t(2 * groups * 256));
  ASSERT_NE(packed->scales(), nullptr);
  ASSERT_NE(packed->col_sums(), nullptr);
  for (int64_t j = 0; j < packed->panels(); ++j) {
    const int8_t *panel = packed->panel_i8x4(j);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t c = 0; c < kPanelCols; ++c)
        for (int64_t i = 0; i < 4; ++i) {
          const int64_t row = 4 * g + i, col = j * kPanelCols + c;
          const int8_t want = row < k && col < n ? w.q[row * ldb + col] : 0;
          ASSERT_EQ(panel[(g * 64 + c) * 4 + i], want) << j << " " << g << " " << c << " " << i;
        }
    for (int64_t c = 0; c < kPanelCols; ++c) {
      const int64_t col = j * kPanelCols + c;
      int32_t sum = 0;
      for (int64_t p = 0; col < n && p < k; ++p)
        sum += w.q[p * ldb + col];
      EXPECT_EQ(packed->col_sums()[col], sum) << col;
      EXPECT_EQ(packed->scales()[col], col < n ? w.scales[col] : 0.0f) << col;
    }
  }
  // The other kinds have no column sums.
  auto i8 = PackedMatrix::PackI8(w.q.data(), w.scales.data(), k, n, ldb);
  ASSERT_TRUE(i8);
  EXPECT_EQ(i8->col_sums(), nullptr);
}

TEST(Int8Gemm, PackI8x4RefusesBadArguments) {
  const std::vector<int8_t> q(16, 1);
  const float sc[4] = {1, 1, 1, 1};
  EXPECT_FALSE(PackedMatrix::PackI8x4(nullptr, sc, 2, 2, 2));
  EXPECT_FALSE(PackedMatrix::PackI8x4(q.data(), nullptr, 2, 2, 2));
  EXPECT_FALSE(PackedMatrix::PackI8x4(q.data(), sc, 0, 2, 2));
  EXPECT_FALSE(PackedMatrix::PackI8x4(q.data(), sc, 2, 0, 2));
  EXPECT_FALSE(PackedMatrix::PackI8x4(q.data(), sc, -1, 2, 2));
  EXPECT_FALSE(PackedMatrix::PackI8x4(q.data(), sc, 2, 4, 3)); // ldb < n
  EXPECT_TRUE(PackedMatrix::PackI8x4(q.data(), sc, 2, 4, 4));
}

TEST(Int8Gemm, QuantizeRows) {
  EXPECT_EQ(kernels::QuantizedDepth(1), 4);
  EXPECT_EQ(kernels::QuantizedDepth(4), 4);
  EXPECT_EQ(kernels::QuantizedDepth(5), 8);
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t k = 6, lda = 7, kq = 8;
  // Row 0: max 31.75 -> s = 0.25 exactly; 12.5 -> 50; 0.375 -> 1.5 -> 2 and
  // 0.125 -> 0.5 -> 0 and -0.625 -> -2.5 -> -2 (half to even); -31.75 ->
  // -127. Row 1: zeros. Row 2: an infinity. Row 3: a NaN.
  const std::vector<float> a = {31.75f, 12.5f, 0.375f, 0.125f, -0.625f, -31.75f, 99.0f, //
                                0.0f,   -0.0f, 0.0f,   0.0f,   0.0f,    0.0f,    99.0f, //
                                1.0f,   inf,   0.0f,   0.0f,   0.0f,    0.0f,    99.0f, //
                                1.0f,   NAN,   0.0f,   0.0f,   0.0f,    0.0f,    99.0f};
  std::vector<uint8_t> aq(4 * kq, 7);
  std::vector<float> s(4, -1.0f);
  kernels::QuantizeRows(a.data(), 4, k, lda, aq.data(), s.data());
  EXPECT_EQ(s[0], 0.25f);
  const int want0[6] = {127, 50, 2, 0, -2, -127};
  for (int p = 0; p < 6; ++p)
    EXPECT_EQ(aq[p], want0[p] + 128) << p;
  EXPECT_EQ(s[1], 0.0f);
  EXPECT_TRUE(std::isnan(s[2]));
  EXPECT_TRUE(std::isnan(s[3]));
  for (int r = 1; r < 4; ++r)
    for (int p = 0; p < kq; ++p)
      EXPECT_EQ(aq[r * kq + p], 128) << r << " " << p;
  for (int p = k; p < kq; ++p)
    EXPECT_EQ(aq[p], 128) << p; // row 0's padding
  // Clamping: a / s just past 127 (the max itself) stays 127.
  const float b[3] = {1.0f, -1.0f, 0.5f};
  uint8_t bq[4];
  float bs;
  kernels::QuantizeRows(b, 1, 3, 3, bq, &bs);
  EXPECT_EQ(bq[0], 255);
  EXPECT_EQ(bq[1], 1);
  EXPECT_EQ(bq[2], 128 + 64); // 63.5 -> 64 (half to even)
  EXPECT_EQ(bq[3], 128);
}

// Random quantized rows (any byte 0..255: Int8Gemm takes what it is given).
std::vector<uint8_t> RandomRows(int64_t m, int64_t kq, std::mt19937 &rng) {
  std::vector<uint8_t> aq(static_cast<size_t>(m * kq));
  for (auto &x : aq)
    x = static_cast<uint8_t>(rng() % 256);
  return aq;
}

void CheckProduct(int64_t m, int64_t k, int64_t n, std::mt19937 &rng) {
  const int64_t kq = kernels::QuantizedDepth(k), ldb = n + 3, ldc = n + 5;
  const Weight w = RandomWeight(k, n, ldb, rng);
  const std::vector<uint8_t> aq = RandomRows(m, kq, rng);
  std::vector<float> as(m);
  std::uniform_real_distribution<float> u(0.001f, 0.1f);
  for (auto &s : as)
    s = u(rng);
  auto packed = PackedMatrix::PackI8x4(w.q.data(), w.scales.data(), k, n, ldb);
  ASSERT_TRUE(packed);
  // Exact sums; tolerance relative to the magnitude of the terms.
  std::vector<double> want(static_cast<size_t>(m * n)), tol(want.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const int64_t t = (int64_t(aq[i * kq + p]) - 128) * w.q[p * ldb + j];
        sum += t;
        mag += t < 0 ? -t : t;
      }
      const double scale = double(as[i]) * double(w.scales[j]);
      want[i * n + j] = double(sum) * scale;
      tol[i * n + j] = 1e-6 * std::fabs(scale) * double(mag) + 1e-30;
    }
  const float sentinel = -12345.0f;
  const char *names[] = {"Int8Gemm", "Int8GemmPortable", "Int8GemmAvx2"};
  for (int path = 0; path < 3; ++path) {
    std::vector<float> c(static_cast<size_t>(m * ldc), sentinel);
    if (path == 0)
      kernels::Int8Gemm(m, aq.data(), as.data(), *packed, c.data(), ldc);
    else if (path == 1)
      kernels::Int8GemmPortable(m, aq.data(), as.data(), *packed, c.data(), ldc);
    else
      kernels::Int8GemmAvx2(m, aq.data(), as.data(), *packed, c.data(), ldc);
    const std::string what = std::string(names[path]) + " m=" + std::to_string(m) +
                             " k=" + std::to_string(k) + " n=" + std::to_string(n);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j)
        ASSERT_NEAR(c[i * ldc + j], want[i * n + j], tol[i * n + j])
            << what << " at " << i << "," << j;
      for (int64_t j = n; j < ldc; ++j)
        ASSERT_EQ(c[i * ldc + j], sentinel) << what << " wrote past n at " << i << "," << j;
    }
  }
}

TEST(Int8Gemm, MatchesExactReference) {
  std::mt19937 rng(11);
  for (int64_t m : {1, 2, 5, 6, 7, 16, 70})
    for (int64_t k : {1, 3, 4, 5, 300, 2048 + 3})
      for (int64_t n : {1, 15, 16, 17, 64, 65, 200}) {
        CheckProduct(m, k, n, rng);
        if (HasFatalFailure())
          return;
      }
}

// The VNNI and portable paths agree bit for bit, and extreme bytes (0 and
// 255 against -127 and 127) are exact.
TEST(Int8Gemm, PathsAgreeAndExtremesAreExact) {
  const int64_t m = 7, k = 1001, n = 130, kq = kernels::QuantizedDepth(k);
  std::vector<int8_t> q(k * n);
  std::vector<uint8_t> aq(m * kq);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      q[p * n + j] = (p + j) % 2 ? 127 : -127;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < kq; ++p)
      aq[i * kq + p] = p >= k ? 128 : (i % 2 ? 255 : 0);
  const std::vector<float> sc(n, 1.0f), as(m, 1.0f);
  auto packed = PackedMatrix::PackI8x4(q.data(), sc.data(), k, n, n);
  ASSERT_TRUE(packed);
  std::vector<float> c1(m * n), c2(m * n), c3(m * n);
  kernels::Int8Gemm(m, aq.data(), as.data(), *packed, c1.data(), n);
  kernels::Int8GemmPortable(m, aq.data(), as.data(), *packed, c2.data(), n);
  kernels::Int8GemmAvx2(m, aq.data(), as.data(), *packed, c3.data(), n);
  EXPECT_EQ(std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(c3.data(), c2.data(), c3.size() * sizeof(float)), 0);
  EXPECT_FALSE(packed->has_int8_min());
  EXPECT_EQ(kernels::Int8GemmAvx2Takes(*packed), __builtin_cpu_supports("avx2") != 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += (int64_t(aq[i * kq + p]) - 128) * q[p * n + j];
      ASSERT_EQ(c1[i * n + j], float(sum)) << i << "," << j;
    }
}

// A weight of -128 (which a plan may hold, though kiln's quantizer never
// writes it) keeps the AVX2 path off its vpmaddubsw products, and every
// path still gives the exact sums, random bytes 0..255 against it included.
TEST(Int8Gemm, WeightOfMinus128IsExactOnEveryPath) {
  std::mt19937 rng(5);
  const int64_t m = 3, k = 37, n = 70, kq = kernels::QuantizedDepth(k);
  Weight w = RandomWeight(k, n, n, rng);
  w.q[5 * n + 3] = INT8_MIN;
  w.q[36 * n + 69] = INT8_MIN;
  const std::vector<uint8_t> aq = RandomRows(m, kq, rng);
  const std::vector<float> as(m, 1.0f), sc(n, 1.0f);
  auto packed = PackedMatrix::PackI8x4(w.q.data(), sc.data(), k, n, n);
  ASSERT_TRUE(packed);
  EXPECT_TRUE(packed->has_int8_min());
  EXPECT_FALSE(kernels::Int8GemmAvx2Takes(*packed));
  std::vector<float> c1(m * n), c2(m * n);
  kernels::Int8Gemm(m, aq.data(), as.data(), *packed, c1.data(), n);
  kernels::Int8GemmAvx2(m, aq.data(), as.data(), *packed, c2.data(), n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += (int64_t(aq[i * kq + p]) - 128) * w.q[p * n + j];
      ASSERT_EQ(c1[i * n + j], float(sum)) << i << "," << j;
      ASSERT_EQ(c2[i * n + j], float(sum)) << i << "," << j;
    }
}

// A NaN row scale (a row QuantizeRows saw NaN in) gives a NaN row of C.
TEST(Int8Gemm, NanRowScaleGivesNanRow) {
  const int64_t k = 8, n = 20;
  std::vector<int8_t> q(k * n, 3);
  const std::vector<float> sc(n, 0.5f);
  auto packed = PackedMatrix::PackI8x4(q.data(), sc.data(), k, n, n);
  ASSERT_TRUE(packed);
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 1, NAN, 3, 4, 5, 6, 7, 8};
  std::vector<uint8_t> aq(2 * k);
  float as[2];
  kernels::QuantizeRows(a.data(), 2, k, k, aq.data(), as);
  std::vector<float> c(2 * n);
  kernels::Int8Gemm(2, aq.data(), as, *packed, c.data(), n);
  for (int64_t j = 0; j < n; ++j) {
    EXPECT_NEAR(c[j], 36 * 3 * 0.5f, 36 * 3 * 0.5f * 0.02f) << j;
    EXPECT_TRUE(std::isnan(c[n + j])) << j;
  }
}

// PackedGemm handed a kI8x4 matrix still computes the f32 product right.
TEST(Int8Gemm, PackedGemmOnI8x4IsRight) {
  std::mt19937 rng(5);
  const int64_t m = 3, k = 10, n = 70;
  const Weight w = RandomWeight(k, n, n, rng);
  auto packed = PackedMatrix::PackI8x4(w.q.data(), w.scales.data(), k, n, n);
  ASSERT_TRUE(packed);
  std::vector<float> a(m * k);
  for (auto &x : a)
    x = static_cast<float>(rng() % 200) / 100.0f - 1.0f;
  std::vector<float> c(m * n, 1.0f);
  kernels::PackedGemmPortable(m, a.data(), k, *packed, 2.0f, 0.5f, c.data(), n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += double(a[i * k + p]) * w.q[p * n + j] * w.scales[j];
      ASSERT_NEAR(c[i * n + j], 2.0 * s + 0.5, 1e-4) << i << "," << j;
    }
  std::vector<float> c2(m * n, 1.0f);
  kernels::PackedGemm(m, a.data(), k, *packed, 2.0f, 0.5f, c2.data(), n);
  EXPECT_EQ(c2, c);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    std::vector<float> c3(m * n, 1.0f);
    EXPECT_TRUE(kernels::PackedGemmAvx2(m, a.data(), k, *packed, 2.0f, 0.5f, c3.data(), n));
    EXPECT_EQ(c3, c);
  }
}

TEST(Int8Gemm, AcquirePackedI8x4Registry) {
  std::mt19937 rng(9);
  const int64_t k = 12, n = 40;
  const Weight w = RandomWeight(k, n, n, rng);
  {
    auto held = kernels::AcquirePackedI8x4(w.q.data(), w.scales.data(), k, n, n);
    ASSERT_TRUE(held);
    EXPECT_EQ(held->elem(), PackedElem::kI8x4);
    const PackedMatrix *found = kernels::FindPacked(w.q.data(), k, n, n, false);
    ASSERT_EQ(found, held.get());
    EXPECT_EQ(found->elem(), PackedElem::kI8x4);
    EXPECT_EQ(kernels::FindPacked(w.q.data(), k, n, n, true), nullptr);
    EXPECT_EQ(kernels::AcquirePackedI8x4(w.q.data(), w.scales.data(), k, n, n), held); // shared
    std::vector<float> other = w.scales;
    other[3] += 1.0f;
    EXPECT_EQ(kernels::AcquirePackedI8x4(w.q.data(), other.data(), k, n, n), nullptr);
    // The same address as kI8: refused while the kI8x4 copy is held.
    EXPECT_EQ(kernels::AcquirePackedI8(w.q.data(), w.scales.data(), k, n, n), nullptr);
  }
  EXPECT_EQ(kernels::FindPacked(w.q.data(), k, n, n, false), nullptr); // released
  {
    // And the other way round.
    auto i8 = kernels::AcquirePackedI8(w.q.data(), w.scales.data(), k, n, n);
    ASSERT_TRUE(i8);
    EXPECT_EQ(kernels::AcquirePackedI8x4(w.q.data(), w.scales.data(), k, n, n), nullptr);
  }
  EXPECT_EQ(kernels::FindPacked(w.q.data(), k, n, n, false), nullptr);
}

} // namespace
} // namespace kiln::test
