// Packed weights (kernels/cpu/products_packed_matrix.h): the packed layout, PackedGemm
// (AVX-512, AVX2 and portable paths; f32, half and int8 weights) against a
// plain double-precision product, and Gemm<float> finding a held packed weight
// by its address.
#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/products_gemm.h"
#include "kernels/cpu/products_packed_matrix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace kiln::test {
namespace {

using kernels::kPanelCols;
using kernels::PackedMatrix;

// The AVX2 path runs (and is checked) on CPUs that have AVX2, FMA and F16C.
bool HasAvx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
}

std::vector<float> Random(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

// op(B)[p][j] of row-major B with leading dim ldb.
float OpB(const std::vector<float> &b, int64_t ldb, bool trans, int64_t p, int64_t j) {
  return trans ? b[j * ldb + p] : b[p * ldb + j];
}

// C = alpha * A @ op(B) + beta * C in double precision; C's padding kept.
std::vector<double> Reference(int64_t m, int64_t n, int64_t k, float alpha,
                              const std::vector<float> &a, int64_t lda, const std::vector<float> &b,
                              int64_t ldb, bool trans, float beta, const std::vector<float> &c,
                              int64_t ldc) {
  std::vector<double> out(c.begin(), c.end());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = beta == 0.0f ? 0.0 : beta * double(c[i * ldc + j]);
      for (int64_t p = 0; p < k; ++p)
        s += alpha * double(a[i * lda + p]) * double(OpB(b, ldb, trans, p, j));
      out[i * ldc + j] = s;
    }
  return out;
}

void ExpectNear(const std::vector<float> &got, const std::vector<double> &want, int64_t k,
                const std::string &what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + k)) << what << " at " << i;
}

// PackedGemm (the path this CPU takes), the portable path and, where the
// CPU has AVX2, the AVX2 path, each on a copy of c, against `want`.
void ExpectEveryPath(int64_t m, const std::vector<float> &a, int64_t lda, const PackedMatrix &b,
                     float alpha, float beta, const std::vector<float> &c, int64_t ldc,
                     const std::vector<double> &want, int64_t k, const std::string &what) {
  std::vector<float> got = c;
  kernels::PackedGemm(m, a.data(), lda, b, alpha, beta, got.data(), ldc);
  ExpectNear(got, want, k, what);
  got = c;
  kernels::PackedGemmPortable(m, a.data(), lda, b, alpha, beta, got.data(), ldc);
  ExpectNear(got, want, k, what + " (portable)");
  if (HasAvx2()) {
    got = c;
    ASSERT_TRUE(kernels::PackedGemmAvx2(m, a.data(), lda, b, alpha, beta, got.data(), ldc));
    ExpectNear(got, want, k, what + " (avx2)");
  }
}

TEST(PackedMatrix, LayoutIsColumnPanelsPaddedWithZeros) {
  std::mt19937 rng(3);
  for (bool trans : {false, true}) {
    const int64_t k = 5, n = 70, ldb = (trans ? k : n) + 3;
    std::vector<float> b = Random(static_cast<size_t>((trans ? n : k) * ldb), rng);
    auto packed = PackedMatrix::Pack(b.data(), k, n, ldb, trans);
    ASSERT_TRUE(packed);
    EXPECT_EQ(packed->panels(), 2);
    for (int64_t j = 0; j < 2 * kPanelCols; ++j)
      for (int64_t p = 0; p < k; ++p) {
        const float got = packed->panel(j / kPanelCols)[p * kPanelCols + j % kPanelCols];
        ASSERT_EQ(got, j < n ? OpB(b, ldb, trans, p, j) : 0.0f)
            << "trans " << trans << " p " << p << " j " << j;
      }
  }
}

TEST(PackedMatrix, RefusesBadSizes) {
  std::vector<float> b(16, 1.0f);
  EXPECT_FALSE(PackedMatrix::Pack(nullptr, 2, 2, 2, false));
  EXPECT_FALSE(PackedMatrix::Pack(b.data(), 0, 2, 2, false));
  EXPECT_FALSE(PackedMatrix::Pack(b.data(), 2, 0, 2, false));
  EXPECT_FALSE(PackedMatrix::Pack(b.data(), 2, 4, 3, false)); // ldb < n
  EXPECT_FALSE(PackedMatrix::Pack(b.data(), 4, 2, 3, true));  // ldb < k
  EXPECT_FALSE(PackedMatrix::Pack(b.data(), int64_t{1} << 40, int64_t{1} << 30, 1 << 30, false));
}

// Every row count class (1, the 6-row tiles and their tails, past the old
// 32-row limit), column tails around the 16- and 64-wide vectors and panels,
// depths across the 256- and 512-row depth blocks, strided A and C, transposed B,
// alpha, beta, and NaN in C under beta 0; every code path.
TEST(PackedGemm, MatchesReference) {
  std::mt19937 rng(17);
  for (int64_t m : {1, 2, 5, 6, 7, 13, 16, 33, 70})
    for (int64_t n : {1, 15, 17, 63, 64, 65, 130})
      for (int64_t k : {1, 7, 257, 513, 1030}) {
        if (m * n * k > 3'000'000)
          continue; // the reference is slow; large shapes only for few rows
        const bool trans = (m + n + k) % 2 == 1;
        const int64_t lda = k + 3, ldc = n + 2, ldb = (trans ? k : n) + 5;
        std::vector<float> a = Random(m * lda, rng), c = Random(m * ldc, rng);
        std::vector<float> b = Random((trans ? n : k) * ldb, rng);
        const float alpha = 0.75f, beta = n % 2 ? 0.0f : -1.5f;
        if (beta == 0.0f)
          for (int64_t i = 0; i < m; ++i)
            c[i * ldc] = std::numeric_limits<float>::quiet_NaN();
        const std::vector<double> want =
            Reference(m, n, k, alpha, a, lda, b, ldb, trans, beta, c, ldc);
        auto packed = PackedMatrix::Pack(b.data(), k, n, ldb, trans);
        ASSERT_TRUE(packed);
        const std::string what = "m " + std::to_string(m) + " n " + std::to_string(n) + " k " +
                                 std::to_string(k) + " trans " + std::to_string(trans);
        ExpectEveryPath(m, a, lda, *packed, alpha, beta, c, ldc, want, k, what);
      }
}

// Every row count from 1 to 70 (whole 6-row tiles and each remainder, one
// to many blocks of rows) at sizes no tile divides: three panels, the last
// two columns wide, and a depth of 600 (not a multiple of 16; full and
// partial depth blocks of both sizes, 256 rows up to 64 rows of A and 512
// past them); beta both zero and not.
TEST(PackedGemm, EveryRowCountAtOddSizes) {
  std::mt19937 rng(29);
  const int64_t n = 130, k = 600, lda = k + 1, ldc = n + 3;
  std::vector<float> b = Random(k * n, rng);
  auto packed = PackedMatrix::Pack(b.data(), k, n, n, false);
  ASSERT_TRUE(packed);
  for (int64_t m = 1; m <= 70; ++m) {
    std::vector<float> a = Random(m * lda, rng), c = Random(m * ldc, rng);
    const float alpha = 1.25f, beta = m % 3 == 0 ? 0.5f : 0.0f;
    const std::vector<double> want = Reference(m, n, k, alpha, a, lda, b, n, false, beta, c, ldc);
    std::vector<float> got = c;
    kernels::PackedGemm(m, a.data(), lda, *packed, alpha, beta, got.data(), ldc);
    ExpectNear(got, want, k, "m " + std::to_string(m));
    if (HasAvx2()) {
      got = c;
      ASSERT_TRUE(kernels::PackedGemmAvx2(m, a.data(), lda, *packed, alpha, beta, got.data(), ldc));
      ExpectNear(got, want, k, "m " + std::to_string(m) + " (avx2)");
    }
  }
}

// Bit patterns of v as bf16 or f16 (round to nearest even), and their f32
// values.
std::vector<uint16_t> ToHalf(const std::vector<float> &v, kernels::PackedElem elem) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = elem == kernels::PackedElem::kF16 ? kernels::FloatToHalf(v[i])
                                               : kernels::FloatToBFloat16(v[i]);
  return out;
}
std::vector<float> Widen(const std::vector<uint16_t> &h, kernels::PackedElem elem) {
  std::vector<float> out(h.size());
  for (size_t i = 0; i < h.size(); ++i)
    out[i] = elem == kernels::PackedElem::kF16 ? kernels::HalfToFloat(h[i])
                                               : kernels::BFloat16ToFloat(h[i]);
  return out;
}

// A bf16 or f16 weight packed in its own type: the same layout
// (zero-padded 64-column panels) at two bytes an element, and every code
// path's product against the reference over its widened values: one row,
// the 6-row tiles and their tails, column tails, depths across the depth
// blocks, transposed B, beta and NaN in C under beta 0.
TEST(PackedGemm, HalfWeightsMatchReference) {
  std::mt19937 rng(41);
  for (kernels::PackedElem elem : {kernels::PackedElem::kBF16, kernels::PackedElem::kF16})
    for (int64_t m : {1, 5, 6, 16, 33})
      for (int64_t n : {15, 64, 130})
        for (int64_t k : {7, 257, 600}) {
          const bool trans = (m + n + k) % 2 == 0;
          const int64_t lda = k + 1, ldc = n + 2, ldb = (trans ? k : n) + 3;
          std::vector<float> a = Random(m * lda, rng), c = Random(m * ldc, rng);
          const std::vector<uint16_t> bh = ToHalf(Random((trans ? n : k) * ldb, rng), elem);
          const std::vector<float> b = Widen(bh, elem);
          const float alpha = 1.5f, beta = k % 2 ? 0.0f : 0.25f;
          if (beta == 0.0f)
            c[0] = std::numeric_limits<float>::quiet_NaN();
          const std::vector<double> want =
              Reference(m, n, k, alpha, a, lda, b, ldb, trans, beta, c, ldc);
          auto packed = PackedMatrix::PackHalf(bh.data(), k, n, ldb, trans, elem);
          ASSERT_TRUE(packed);
          ASSERT_EQ(packed->elem(), elem);
          ASSERT_EQ(packed->bytes(), static_cast<size_t>(packed->panels() * kPanelCols * k * 2));
          for (int64_t j = 0; j < packed->panels() * kPanelCols; j += 13)
            ASSERT_EQ(
                packed->panel_as<uint16_t>(j / kPanelCols)[(k - 1) * kPanelCols + j % kPanelCols],
                j < n ? (trans ? bh[j * ldb + k - 1] : bh[(k - 1) * ldb + j]) : 0);
          const std::string what = std::string(elem == kernels::PackedElem::kF16 ? "f16" : "bf16") +
                                   " m " + std::to_string(m) + " n " + std::to_string(n) + " k " +
                                   std::to_string(k) + " trans " + std::to_string(trans);
          ExpectEveryPath(m, a, lda, *packed, alpha, beta, c, ldc, want, k, what);
        }
  EXPECT_EQ(PackedMatrix::PackHalf(nullptr, 2, 2, 2, false, kernels::PackedElem::kF16), nullptr);
  std::vector<uint16_t> one(4, 0);
  EXPECT_EQ(PackedMatrix::PackHalf(one.data(), 2, 2, 2, false, kernels::PackedElem::kF32), nullptr);
}

// Gemm<float> given a half weight's address finds its packed copy and
// multiplies with it (what a half plan's products do).
TEST(PackedGemm, GemmFindsHeldHalfWeightByAddress) {
  std::mt19937 rng(43);
  const int64_t m = 4, k = 50, n = 90;
  for (kernels::PackedElem elem : {kernels::PackedElem::kBF16, kernels::PackedElem::kF16}) {
    const std::vector<float> a = Random(m * k, rng);
    const std::vector<uint16_t> bh = ToHalf(Random(k * n, rng), elem);
    auto held = kernels::AcquirePackedHalf(bh.data(), k, n, n, false, elem);
    ASSERT_TRUE(held);
    const kernels::PackedMatrix *found = kernels::FindPacked(bh.data(), k, n, n, false);
    ASSERT_EQ(found, held.get());
    EXPECT_EQ(found->elem(), elem);
    // The same address asked for as f32 is refused, not repacked.
    EXPECT_EQ(kernels::AcquirePacked(reinterpret_cast<const float *>(bh.data()), k, n, n, false),
              nullptr);
    std::vector<float> c(m * n);
    kernels::Gemm<float>(false, false, m, n, k, 1.0f, a.data(), k,
                         reinterpret_cast<const float *>(bh.data()), n, 0.0f, c.data(), n);
    ExpectNear(c,
               Reference(m, n, k, 1.0f, a, k, Widen(bh, elem), n, false, 0.0f,
                         std::vector<float>(m * n, 0.0f), n),
               k, "gemm through the half copy");
  }
}

// An int8 weight [k, n] (q in [-127, 127]) and its column scales (positive,
// a few times apart, so that a scale applied to the wrong column shows).
struct I8Weight {
  std::vector<int8_t> q;
  std::vector<float> scales;
};
I8Weight RandomI8(int64_t k, int64_t n, int64_t ldb, std::mt19937 &rng) {
  std::uniform_int_distribution<int> qd(-127, 127);
  std::uniform_real_distribution<float> sd(0.002f, 0.02f);
  I8Weight w{std::vector<int8_t>(static_cast<size_t>(k * ldb)), std::vector<float>(n)};
  for (int8_t &v : w.q)
    v = static_cast<int8_t>(qd(rng));
  for (float &v : w.scales)
    v = sd(rng);
  return w;
}

// C = alpha * A @ (Q diag(scales)) + beta * C in double precision, C's
// padding kept; `mag` gets each element's sum of |terms| (the scale of its
// rounding error), 0 for padding.
std::vector<double> ReferenceI8(int64_t m, int64_t n, int64_t k, float alpha,
                                const std::vector<float> &a, int64_t lda, const I8Weight &w,
                                int64_t ldb, float beta, const std::vector<float> &c, int64_t ldc,
                                std::vector<double> &mag) {
  std::vector<double> out(c.begin(), c.end());
  mag.assign(c.size(), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double cv = beta == 0.0f ? 0.0 : beta * double(c[i * ldc + j]);
      double s = 0.0, abs_sum = std::fabs(cv);
      for (int64_t p = 0; p < k; ++p) {
        const double t =
            double(alpha) * double(a[i * lda + p]) * double(w.q[p * ldb + j]) * double(w.scales[j]);
        s += t;
        abs_sum += std::fabs(t);
      }
      out[i * ldc + j] = s + cv;
      mag[i * ldc + j] = abs_sum;
    }
  return out;
}

// got against want within 1e-5 of each element's sum of |terms| (f32
// accumulation's error is far below it; one wrong term or scale is not).
void ExpectNearMag(const std::vector<float> &got, const std::vector<double> &want,
                   const std::vector<double> &mag, const std::string &what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) { // padding that held NaN: left alone
      ASSERT_TRUE(std::isnan(got[i])) << what << " at " << i;
      continue;
    }
    ASSERT_NEAR(got[i], want[i], 1e-5 * mag[i] + 1e-30) << what << " at " << i;
  }
}

// The layout of an int8 weight: zero-padded 64-column panels at one byte an
// element, its scales copied and zero-padded to whole panels; and the sizes
// and arguments PackI8 refuses.
TEST(PackedMatrix, I8LayoutAndScales) {
  std::mt19937 rng(7);
  const int64_t k = 5, n = 70, ldb = n + 3;
  const I8Weight w = RandomI8(k, n, ldb, rng);
  auto packed = PackedMatrix::PackI8(w.q.data(), w.scales.data(), k, n, ldb);
  ASSERT_TRUE(packed);
  EXPECT_EQ(packed->elem(), kernels::PackedElem::kI8);
  EXPECT_EQ(packed->panels(), 2);
  EXPECT_EQ(packed->bytes(), static_cast<size_t>(2 * kPanelCols * k));
  ASSERT_NE(packed->scales(), nullptr);
  for (int64_t j = 0; j < 2 * kPanelCols; ++j) {
    ASSERT_EQ(packed->scales()[j], j < n ? w.scales[j] : 0.0f) << "scale " << j;
    for (int64_t p = 0; p < k; ++p)
      ASSERT_EQ(packed->panel_as<int8_t>(j / kPanelCols)[p * kPanelCols + j % kPanelCols],
                j < n ? w.q[p * ldb + j] : 0)
          << "p " << p << " j " << j;
  }
  std::vector<float> b(16, 1.0f);
  auto f32 = PackedMatrix::Pack(b.data(), 4, 4, 4, false);
  ASSERT_TRUE(f32);
  EXPECT_EQ(f32->scales(), nullptr);
  const float *sc = w.scales.data();
  EXPECT_FALSE(PackedMatrix::PackI8(nullptr, sc, 2, 2, 2));
  EXPECT_FALSE(PackedMatrix::PackI8(w.q.data(), nullptr, 2, 2, 2));
  EXPECT_FALSE(PackedMatrix::PackI8(w.q.data(), sc, 0, 2, 2));
  EXPECT_FALSE(PackedMatrix::PackI8(w.q.data(), sc, 2, 0, 2));
  EXPECT_FALSE(PackedMatrix::PackI8(w.q.data(), sc, 2, 4, 3)); // ldb < n
  std::vector<uint16_t> h(4, 0);
  EXPECT_FALSE(PackedMatrix::PackHalf(h.data(), 2, 2, 2, false, kernels::PackedElem::kI8));
}

// An int8 weight with per-column scales on every code path against the
// reference: one row (the whole-panel decode tile), the 6-row tiles and
// their tails, past 64 rows (the deeper depth blocks); column tails inside
// 8- and 16-wide vectors and past whole panels; depths across the 256- and
// 512-row depth blocks; strided A and C; alpha; beta 0 (NaN in C), 1 and
// another.
TEST(PackedGemm, I8WeightsMatchReference) {
  std::mt19937 rng(53);
  int round = 0;
  for (int64_t m : {1, 2, 5, 6, 7, 16, 70})
    for (int64_t n : {1, 13, 64, 70, 130})
      for (int64_t k : {7, 300, 600, 1030}) {
        const int64_t lda = k + 3, ldc = n + 2, ldb = n + 5;
        const I8Weight w = RandomI8(k, n, ldb, rng);
        std::vector<float> a = Random(m * lda, rng), c = Random(m * ldc, rng);
        const float alpha = 0.75f, beta = std::vector<float>{0.0f, 1.0f, -0.5f}[round++ % 3];
        if (beta == 0.0f)
          for (int64_t i = 0; i < m; ++i)
            c[i * ldc + (i * 7) % n] = std::numeric_limits<float>::quiet_NaN();
        std::vector<double> mag;
        const std::vector<double> want =
            ReferenceI8(m, n, k, alpha, a, lda, w, ldb, beta, c, ldc, mag);
        auto packed = PackedMatrix::PackI8(w.q.data(), w.scales.data(), k, n, ldb);
        ASSERT_TRUE(packed);
        const std::string what = "i8 m " + std::to_string(m) + " n " + std::to_string(n) + " k " +
                                 std::to_string(k) + " beta " + std::to_string(beta);
        std::vector<float> got = c;
        kernels::PackedGemm(m, a.data(), lda, *packed, alpha, beta, got.data(), ldc);
        ExpectNearMag(got, want, mag, what);
        got = c;
        kernels::PackedGemmPortable(m, a.data(), lda, *packed, alpha, beta, got.data(), ldc);
        ExpectNearMag(got, want, mag, what + " (portable)");
        if (HasAvx2()) {
          got = c;
          ASSERT_TRUE(
              kernels::PackedGemmAvx2(m, a.data(), lda, *packed, alpha, beta, got.data(), ldc));
          ExpectNearMag(got, want, mag, what + " (avx2)");
        }
      }
}

// Gemm<float> given an int8 weight's address finds its packed copy and
// multiplies with it, for one row and several; the address is shared by a
// second acquirer with the same scales and refused as another kind or with
// other scales; dropped, it is no longer found.
TEST(PackedGemm, GemmFindsHeldI8WeightByAddress) {
  std::mt19937 rng(59);
  const int64_t m = 4, k = 300, n = 90;
  const I8Weight w = RandomI8(k, n, n, rng);
  const std::vector<float> a = Random(m * k, rng);
  auto held = kernels::AcquirePackedI8(w.q.data(), w.scales.data(), k, n, n);
  ASSERT_TRUE(held);
  const kernels::PackedMatrix *found = kernels::FindPacked(w.q.data(), k, n, n, false);
  ASSERT_EQ(found, held.get());
  EXPECT_EQ(found->elem(), kernels::PackedElem::kI8);
  EXPECT_EQ(kernels::AcquirePackedI8(w.q.data(), w.scales.data(), k, n, n), held); // shared
  std::vector<float> other = w.scales;
  other[n - 1] *= 2.0f;
  EXPECT_EQ(kernels::AcquirePackedI8(w.q.data(), other.data(), k, n, n), nullptr);
  EXPECT_EQ(kernels::AcquirePacked(reinterpret_cast<const float *>(w.q.data()), k, n, n, false),
            nullptr);
  EXPECT_EQ(kernels::AcquirePackedHalf(reinterpret_cast<const uint16_t *>(w.q.data()), k, n, n,
                                       false, kernels::PackedElem::kBF16),
            nullptr);
  for (int64_t rows : {int64_t{1}, m}) {
    std::vector<float> c(rows * n, std::numeric_limits<float>::quiet_NaN());
    kernels::Gemm<float>(false, false, rows, n, k, 1.0f, a.data(), k,
                         reinterpret_cast<const float *>(w.q.data()), n, 0.0f, c.data(), n);
    std::vector<double> mag;
    const std::vector<double> want =
        ReferenceI8(rows, n, k, 1.0f, a, k, w, n, 0.0f, std::vector<float>(rows * n, 0.0f), n, mag);
    ExpectNearMag(c, want, mag, "gemm through the int8 copy, rows " + std::to_string(rows));
  }
  held.reset();
  EXPECT_EQ(kernels::FindPacked(w.q.data(), k, n, n, false), nullptr);
}

TEST(PackedGemm, ZeroRowsTouchNothing) {
  std::vector<float> b(64, 1.0f), c(4, 7.0f);
  auto packed = PackedMatrix::Pack(b.data(), 8, 8, 8, false);
  ASSERT_TRUE(packed);
  kernels::PackedGemm(0, nullptr, 8, *packed, 1.0f, 0.0f, c.data(), 8);
  EXPECT_EQ(c, std::vector<float>(4, 7.0f));
}

// Gemm<float> reads a held packed copy instead of B: proven by changing the
// original after packing (the result follows the copy), then by dropping
// the copy (the result follows the original again).
TEST(PackedGemm, GemmFindsHeldPackedWeightByAddress) {
  std::mt19937 rng(5);
  const int64_t m = 3, k = 40, n = 70;
  std::vector<float> a = Random(m * k, rng), b = Random(k * n, rng), c(m * n);
  const std::vector<float> b0 = b;
  auto held = kernels::AcquirePacked(b.data(), k, n, n, false);
  ASSERT_TRUE(held);
  EXPECT_EQ(kernels::FindPacked(b.data(), k, n, n, false), held.get());
  EXPECT_EQ(kernels::FindPacked(b.data(), k, n, n, true), nullptr);      // other reading
  EXPECT_EQ(kernels::FindPacked(b.data(), k, n - 1, n, false), nullptr); // other dims
  EXPECT_EQ(kernels::AcquirePacked(b.data(), k, n, n, false), held);     // shared
  for (float &v : b)
    v = 0.0f;
  for (int64_t rows : {int64_t{1}, m}) {
    kernels::Gemm<float>(false, false, rows, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(),
                         n);
    std::vector<float> c_rows(c.begin(), c.begin() + rows * n);
    ExpectNear(c_rows,
               Reference(rows, n, k, 1.0f, a, k, b0, n, false, 0.0f,
                         std::vector<float>(rows * n, 0.0f), n),
               k, "rows " + std::to_string(rows));
  }
  held.reset();
  EXPECT_EQ(kernels::FindPacked(b.data(), k, n, n, false), nullptr);
  kernels::Gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
  EXPECT_EQ(c, std::vector<float>(m * n, 0.0f));
}

} // namespace
} // namespace kiln::test
