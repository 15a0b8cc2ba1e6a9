// Int8Gemm's AVX2 path, for CPUs without AVX-512 VNNI: the same exact int32
// sums with vpmaddubsw/vpmaddwd. A quantized byte aq = q + 128 is q's two's
// complement with the top bit flipped, so aq ^ 0x80 is q as int8; |q| (at
// most 128 as an unsigned byte) times sign(q) * w is q * w, and two such
// products of |w| <= 127 stay inside vpmaddubsw's int16 (2 * 128 * 127 =
// 32512). A weight of -128 would not (its negation overflows), so a matrix
// holding one takes the portable loops. Compiled for the baseline ISA; the
// AVX2 functions carry their own target.
#include "kernels/cpu/products_int8_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace kiln::kernels {
namespace {

#define KILN_AVX2 __attribute__((target("avx2,fma")))

constexpr int64_t kGroupBytes = 256; // one group of a panel: 64 columns x 4 rows
constexpr int kVectors = 8;          // a panel's 64 columns as 8 vectors of 8 int32

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// One row of quantized A against panel `panel` (groups of 4 rows): the 64
// columns' int32 sums, then C = float(sum) * (a_scale * scale) for the
// first `cols` columns.
KILN_AVX2 void RowPanelAvx2(int64_t groups, const uint8_t *aq, const int8_t *panel, float a_scale,
                            const float *scale, float *c, int64_t cols) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[kVectors];
  for (int j = 0; j < kVectors; ++j)
    acc[j] = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    int32_t four;
    std::memcpy(&four, aq + 4 * g, sizeof(four));
    const __m256i q = _mm256_xor_si256(_mm256_set1_epi32(four), flip); // q as int8
    const __m256i mag = _mm256_abs_epi8(q); // |q|, -128 read as 128 unsigned
    const int8_t *bg = panel + g * kGroupBytes;
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(bg + 32 * j));
      const __m256i pairs = _mm256_maddubs_epi16(mag, _mm256_sign_epi8(w, q));
      acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(pairs, ones));
    }
  }
  const __m256 sa = _mm256_set1_ps(a_scale);
  alignas(32) float tail[8];
  for (int j = 0; j < kVectors && 8 * j < cols; ++j) {
    const __m256 v = _mm256_cvtepi32_ps(acc[j]);
    const __m256 out = _mm256_mul_ps(v, _mm256_mul_ps(sa, _mm256_loadu_ps(scale + 8 * j)));
    if (8 * j + 8 <= cols) {
      _mm256_storeu_ps(c + 8 * j, out);
    } else {
      _mm256_store_ps(tail, out);
      std::memcpy(c + 8 * j, tail, static_cast<size_t>(cols - 8 * j) * sizeof(float));
    }
  }
}

// Panels [j0, j1) of C, a row at a time (a panel's groups stay in L2
// between rows).
void PanelsAvx2(int64_t m, const uint8_t *aq, const float *a_scale, const PackedMatrix &b,
                int64_t j0, int64_t j1, float *c, int64_t ldc) {
  const int64_t n = b.n(), groups = (b.k() + 3) / 4, lda = QuantizedDepth(b.k());
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t col = j * kPanelCols, cols = std::min(kPanelCols, n - col);
    for (int64_t i = 0; i < m; ++i)
      RowPanelAvx2(groups, aq + i * lda, b.panel_i8x4(j), a_scale[i], b.scales() + col,
                   c + i * ldc + col, cols);
  }
}

} // namespace

bool Int8GemmAvx2Takes(const PackedMatrix &b) {
  return HasAvx2() && b.elem() == PackedElem::kI8x4 && !b.has_int8_min();
}

void Int8GemmAvx2(int64_t m, const uint8_t *aq, const float *a_scale, const PackedMatrix &b,
                  float *c, int64_t ldc) {
  if (!Int8GemmAvx2Takes(b)) {
    Int8GemmPortable(m, aq, a_scale, b, c, ldc);
    return;
  }
  ForPanels(m, b, [&](int64_t j0, int64_t j1) { PanelsAvx2(m, aq, a_scale, b, j0, j1, c, ldc); });
}

} // namespace kiln::kernels
