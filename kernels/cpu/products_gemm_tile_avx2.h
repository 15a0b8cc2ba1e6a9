// Register tiles of C for PackedGemm on CPUs with AVX2 and FMA but no
// AVX-512 (gemm_tile.h has the AVX-512 ones). Internal to kernels/cpu; only
// files compiled for the baseline ISA that call these behind a run-time
// check include it.
//
// 16 ymm registers: a prompt's tile is 6 rows by 2 vectors (16 columns),
// 12 accumulators, 2 vectors of B and one broadcast of A; per depth step 12
// FMAs against 2 loads and 6 broadcasts. A decode row (one row) takes a
// whole 64-column panel, 8 accumulators, B read straight into the FMAs.
#pragma once

#include "kernels/cpu/products_gemm_tile.h" // Prefetch, kRowTile, kPrefetchRows

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

namespace kiln::kernels::tile {

#define KILN_AVX2 __attribute__((target("avx2,fma,f16c")))

// The first `valid` of 8 lanes (0 to 8).
KILN_AVX2 inline __m256i LaneMask(int valid) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// 8 elements of B widened to f32 (bf16 shifted into the upper halves, f16
// and int8 converted).
KILN_AVX2 inline __m256 LoadB8(const float *p) { return _mm256_loadu_ps(p); }
KILN_AVX2 inline __m256 LoadB8(const Bf16 *p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
KILN_AVX2 inline __m256 LoadB8(const F16 *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}
KILN_AVX2 inline __m256 LoadB8(const I8 *p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))));
}

// One tile: MR rows by NV vectors of 8 columns; only the first `cols`
// columns of C are written (B's columns past them are read: panels are
// zero-padded to whole vectors). `pf` as in gemm_tile.h, the lines of NV * 8
// elements. An int8 B's products are multiplied by `scale` (C's columns'
// scales, NV whole vectors of them, zero-padded) as well as alpha; the other
// kinds ignore it.
template <int MR, int NV, typename TB = float>
KILN_AVX2 void Tile2(int64_t k, float alpha, const float *a, int64_t lda, const TB *b, int64_t ldb,
                     float beta, float *c, int64_t ldc, int cols, Prefetch pf,
                     const float *scale = nullptr) {
  constexpr int kLines = (NV * 8 * static_cast<int>(sizeof(TB)) + 63) / 64;
  __m256 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j)
      acc[r][j] = _mm256_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const TB *brow = b + p * ldb;
    if (p < pf.rows)
#pragma GCC unroll 4
      for (int l = 0; l < kLines; ++l)
        _mm_prefetch(reinterpret_cast<const char *>(static_cast<const TB *>(pf.at) + p * ldb) +
                         64 * l,
                     _MM_HINT_T1);
    if constexpr (MR == 1 && std::is_same_v<TB, I8>) {
      // One row: each widened vector straight into its FMA, as f32's loads
      // fold into theirs. Widened all first, 8 of them and 8 accumulators
      // overflow the 16 registers and GCC keeps an accumulator in memory.
      const __m256 av = _mm256_broadcast_ss(a + p);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j)
        acc[0][j] = _mm256_fmadd_ps(av, LoadB8(brow + 8 * j), acc[0][j]);
    } else {
      __m256 bv[NV];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j)
        bv[j] = LoadB8(brow + 8 * j);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m256 av = _mm256_broadcast_ss(a + r * lda + p);
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j)
          acc[r][j] = _mm256_fmadd_ps(av, bv[j], acc[r][j]);
      }
    }
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  __m256 vs[NV]; // alpha times each column's scale (int8 B)
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j)
    if constexpr (std::is_same_v<TB, I8>)
      vs[j] = _mm256_mul_ps(_mm256_loadu_ps(scale + 8 * j), va);
    else
      vs[j] = va;
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      const int valid = cols - 8 * j;
      if (valid <= 0)
        break;
      float *cp = c + r * ldc + 8 * j;
      __m256 out = _mm256_mul_ps(acc[r][j], vs[j]);
      if (valid >= 8) {
        if (beta != 0.0f) // beta 0 ignores C, even NaN garbage in it
          out = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cp), out);
        _mm256_storeu_ps(cp, out);
      } else {
        const __m256i mask = LaneMask(valid);
        if (beta != 0.0f)
          out = _mm256_fmadd_ps(vb, _mm256_maskload_ps(cp, mask), out);
        _mm256_maskstore_ps(cp, mask, out);
      }
    }
}

// Rows [0, m) of a 16-column stripe of a panel, in tiles of kRowTile rows
// (the last one to five rows a smaller tile). Only the first tile issues
// `pf`'s requests. `scale` as in Tile2.
template <typename TB>
KILN_AVX2 void Stripe2(int64_t m, int64_t k, float alpha, const float *a, int64_t lda, const TB *b,
                       int64_t ldb, float beta, float *c, int64_t ldc, int cols, Prefetch pf,
                       const float *scale = nullptr) {
  int64_t r = 0;
  for (; r + kRowTile <= m; r += kRowTile, pf = Prefetch())
    Tile2<kRowTile, 2, TB>(k, alpha, a + r * lda, lda, b, ldb, beta, c + r * ldc, ldc, cols, pf,
                           scale);
  const float *ar = a + r * lda;
  float *cr = c + r * ldc;
  switch (m - r) {
  case 5:
    Tile2<5, 2, TB>(k, alpha, ar, lda, b, ldb, beta, cr, ldc, cols, pf, scale);
    break;
  case 4:
    Tile2<4, 2, TB>(k, alpha, ar, lda, b, ldb, beta, cr, ldc, cols, pf, scale);
    break;
  case 3:
    Tile2<3, 2, TB>(k, alpha, ar, lda, b, ldb, beta, cr, ldc, cols, pf, scale);
    break;
  case 2:
    Tile2<2, 2, TB>(k, alpha, ar, lda, b, ldb, beta, cr, ldc, cols, pf, scale);
    break;
  case 1:
    Tile2<1, 2, TB>(k, alpha, ar, lda, b, ldb, beta, cr, ldc, cols, pf, scale);
    break;
  default:
    break;
  }
}

// Whether this CPU runs these tiles (every CPU with AVX2 has F16C too, but
// it is checked).
inline bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has;
}

} // namespace kiln::kernels::tile
