// f32 weights that bf16 or f16 holds exactly, packed in that type
// (PackedMatrix::PackNarrowed, AcquirePacked with narrow): which weights
// qualify (ExactHalfElem, at the edges of each type), and that every product
// path gives bit for bit what it gives on the f32 packing.
#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/products_gemm.h"
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

using kernels::PackedElem;
using kernels::PackedMatrix;

bool HasAvx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
}

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// n random values that `elem` holds exactly (bf16 or f16 rounded back).
std::vector<float> ExactValues(size_t n, PackedElem elem, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = elem == PackedElem::kBF16 ? kernels::BFloat16ToFloat(kernels::FloatToBFloat16(u(rng)))
                                  : kernels::HalfToFloat(kernels::FloatToHalf(u(rng)));
  return v;
}

PackedElem ElemOf(std::vector<float> v) {
  return kernels::ExactHalfElem(v.data(), 1, static_cast<int64_t>(v.size()),
                                static_cast<int64_t>(v.size()), false);
}

TEST(ExactHalfElem, EdgesOfEachType) {
  const float inf = std::numeric_limits<float>::infinity();
  // bf16: any value whose low 16 bits are zero, f32's whole range.
  EXPECT_EQ(ElemOf({0.0f, -0.0f, 1.0f, -2.5f, inf, -inf, FromBits(0x7f7f0000u)}),
            PackedElem::kBF16);
  EXPECT_EQ(ElemOf({FromBits(0x00010000u)}), PackedElem::kBF16); // an f32 subnormal
  // f16 but not bf16: 1 + 2^-10 (f16's last fraction bit).
  EXPECT_EQ(ElemOf({1.0f + 0x1p-10f, 65504.0f, -0x1p-14f}), PackedElem::kF16);
  EXPECT_EQ(ElemOf({0x1p-24f, 3 * 0x1p-24f, 1023 * 0x1p-24f}), PackedElem::kF16); // subnormals
  // Neither: past f16's range and with bits bf16 drops, below f16's
  // smallest subnormal, between its subnormals, one bit past its fraction,
  // a NaN whose payload bf16 drops.
  EXPECT_EQ(ElemOf({65536.0f + 32.0f}), PackedElem::kF32);
  EXPECT_EQ(ElemOf({0x1p-25f + 0x1p-40f}), PackedElem::kF32);
  EXPECT_EQ(ElemOf({(1.0f + 0x1p-9f) * 0x1p-24f}), PackedElem::kF32);
  EXPECT_EQ(ElemOf({1.0f + 0x1p-11f}), PackedElem::kF32);
  EXPECT_EQ(ElemOf({1.0f, FromBits(0x7fc00001u)}), PackedElem::kF32);
  // A NaN that bf16 keeps bit for bit narrows; f16 takes no NaN.
  EXPECT_EQ(ElemOf({1.0f, FromBits(0x7fc00000u)}), PackedElem::kBF16);
  EXPECT_EQ(ElemOf({1.0f + 0x1p-10f, FromBits(0x7fc00000u)}), PackedElem::kF32);
  // 2^-25 is exact in bf16 (low bits zero) though not in f16.
  EXPECT_EQ(ElemOf({0x1p-25f}), PackedElem::kBF16);
  // Every f16 value, through the f16 conversion, is f16-exact.
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = kernels::HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f))
      continue;
    const PackedElem e = ElemOf({f, 1.0f + 0x1p-10f});
    ASSERT_EQ(e, PackedElem::kF16) << "f16 bits " << h;
  }
}

TEST(ExactHalfElem, ReadsOnlyOpB) {
  std::mt19937 rng(3);
  const int64_t k = 9, n = 70, ld = 80;
  // Row-major [k, ld] with bf16 values in op(B) and a stray bit in the
  // padding columns: the padding does not count.
  std::vector<float> b = ExactValues(k * ld, PackedElem::kBF16, rng);
  for (int64_t p = 0; p < k; ++p)
    b[p * ld + n] = 1.0f + 0x1p-20f;
  EXPECT_EQ(kernels::ExactHalfElem(b.data(), k, n, ld, false), PackedElem::kBF16);
  EXPECT_EQ(kernels::ExactHalfElem(b.data(), k, n + 1, ld, false), PackedElem::kF32);
  // Transposed: B is [n, ld], op(B) = B^T [k = ld's first k, n].
  EXPECT_EQ(kernels::ExactHalfElem(b.data(), n, k, ld, true), PackedElem::kBF16);
  EXPECT_EQ(kernels::ExactHalfElem(nullptr, k, n, ld, false), PackedElem::kF32);
  EXPECT_EQ(kernels::ExactHalfElem(b.data(), k, n, n - 1, false), PackedElem::kF32);
}

// C of one path on `b`, m rows.
std::vector<float> Product(int path, int64_t m, const std::vector<float> &a, int64_t k,
                           const PackedMatrix &b, int64_t n) {
  std::vector<float> c(m * n, -7.0f);
  if (path == 0)
    kernels::PackedGemm(m, a.data(), k, b, 1.5f, 0.0f, c.data(), n);
  else if (path == 1)
    EXPECT_TRUE(kernels::PackedGemmAvx2(m, a.data(), k, b, 1.5f, 0.0f, c.data(), n));
  else
    kernels::PackedGemmPortable(m, a.data(), k, b, 1.5f, 0.0f, c.data(), n);
  return c;
}

TEST(PackNarrowed, SameBitsAsTheF32PackingOnEveryPath) {
  std::mt19937 rng(5);
  const int64_t k = 37, n = 70;
  for (PackedElem elem : {PackedElem::kBF16, PackedElem::kF16})
    for (bool trans : {false, true}) {
      const std::vector<float> b = ExactValues(k * n, elem, rng);
      const int64_t ldb = trans ? k : n;
      ASSERT_EQ(kernels::ExactHalfElem(b.data(), k, n, ldb, trans), elem);
      auto wide = PackedMatrix::Pack(b.data(), k, n, ldb, trans);
      auto narrow = PackedMatrix::PackNarrowed(b.data(), k, n, ldb, trans, elem);
      ASSERT_TRUE(wide && narrow);
      EXPECT_EQ(narrow->elem(), elem);
      EXPECT_EQ(narrow->source_elem(), PackedElem::kF32);
      EXPECT_EQ(narrow->bytes() * 2, wide->bytes());
      for (int path = 0; path < 3; ++path) {
        if (path == 1 && !HasAvx2())
          continue;
        for (int64_t m : {1, 2, 6, 7, 16, 70}) {
          std::uniform_real_distribution<float> u(-1.0f, 1.0f);
          std::vector<float> a(m * k);
          for (float &x : a)
            x = u(rng);
          const std::vector<float> cw = Product(path, m, a, k, *wide, n);
          const std::vector<float> cn = Product(path, m, a, k, *narrow, n);
          ASSERT_EQ(std::memcmp(cw.data(), cn.data(), cw.size() * sizeof(float)), 0)
              << "path " << path << " m " << m << " trans " << trans << " elem "
              << static_cast<int>(elem);
        }
      }
    }
  std::vector<float> b(4, 1.0f);
  EXPECT_EQ(PackedMatrix::PackNarrowed(b.data(), 2, 2, 2, false, PackedElem::kF32), nullptr);
  EXPECT_EQ(PackedMatrix::PackNarrowed(b.data(), 2, 2, 2, false, PackedElem::kI8), nullptr);
}

// AcquirePacked with narrow: a bf16-exact weight is held in bf16 (and
// Gemm<float> finds it by address and gives the f32 packing's bits); one
// stray bit keeps a weight f32 (the near miss); without narrow nothing
// narrows.
TEST(PackNarrowed, AcquireNarrowsOnlyExactWeights) {
  std::mt19937 rng(8);
  const int64_t k = 64, n = 130, m = 3;
  std::vector<float> b = ExactValues(k * n, PackedElem::kBF16, rng);
  std::vector<float> a(m * k, 0.25f);
  std::vector<float> want(m * n), got(m * n);
  {
    auto wide = PackedMatrix::Pack(b.data(), k, n, n, false);
    kernels::PackedGemm(m, a.data(), k, *wide, 1.0f, 0.0f, want.data(), n);
  }
  {
    auto held = kernels::AcquirePacked(b.data(), k, n, n, false, /*narrow=*/true);
    ASSERT_TRUE(held);
    EXPECT_EQ(held->elem(), PackedElem::kBF16);
    EXPECT_EQ(held->source_elem(), PackedElem::kF32);
    // A second holder asking for f32 shares the same copy.
    EXPECT_EQ(kernels::AcquirePacked(b.data(), k, n, n, false), held);
    kernels::Gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, got.data(),
                         n);
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
  }
  {
    auto held = kernels::AcquirePacked(b.data(), k, n, n, false, /*narrow=*/false);
    ASSERT_TRUE(held);
    EXPECT_EQ(held->elem(), PackedElem::kF32);
  }
  b[k * n / 2] = 1.0f + 0x1p-20f; // neither bf16 nor f16
  auto held = kernels::AcquirePacked(b.data(), k, n, n, false, /*narrow=*/true);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->elem(), PackedElem::kF32);
}

} // namespace
} // namespace kiln::test
