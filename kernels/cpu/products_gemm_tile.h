// Register tiles of C for few-row products, shared by SmallMGemm (B
// row-major) and PackedGemm (B in 64-column panels, ldb = 64). Internal to
// kernels/cpu; only files that are compiled for the baseline ISA and call
// these behind a run-time AVX-512 check include it.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

namespace kiln::kernels::tile {

#define KILN_AVX512 __attribute__((target("avx512f,fma")))

constexpr int kRowTile = 6; // rows of C per tile
constexpr int kVecTile = 4; // 16-float vectors of C per tile row: 64 columns
constexpr int64_t kPrefetchRows = 32;

// Rows of memory a tile asks the cache for while it reads B: rows [0,
// rows) of `at`, row p (all NV vectors of it) beside B's row p; no rows, no
// requests. They go to L2 (prefetcht1): asked into L1, a block ahead would
// evict the rows the tiles are reading.
struct Prefetch {
  const void *at = nullptr; // B's element type
  int64_t rows = 0;
};

// Narrow elements of B as stored: bf16 (the upper half of an f32's bits),
// IEEE f16, and int8 (quantized: the tiles scale each column of C by its
// `scale` once, after the depth). Distinct types so the loads below
// overload on them.
struct Bf16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};
struct I8 {
  int8_t v;
};

// 16 elements of B widened to f32: f32 as they are (the last vector of a
// row masked by `tail`), bf16 shifted into the upper half of each lane, f16
// and int8 converted. B's panels are zero-padded to whole vectors, so the
// narrow loads are never masked.
KILN_AVX512 inline __m512 LoadB(const float *p, bool last, __mmask16 tail) {
  return last ? _mm512_maskz_loadu_ps(tail, p) : _mm512_loadu_ps(p);
}
KILN_AVX512 inline __m512 LoadB(const Bf16 *p, bool, __mmask16) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
KILN_AVX512 inline __m512 LoadB(const F16 *p, bool, __mmask16) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
}
KILN_AVX512 inline __m512 LoadB(const I8 *p, bool, __mmask16) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))));
}

// One tile: MR rows by NV vectors of C; the last vector is masked by `tail`
// (all ones for full vectors). 6 x 4 accumulators + 4 B vectors + 1 A
// broadcast fit the 32 zmm registers. An int8 B's products are multiplied
// by `scale` (C's columns' scales, NV whole vectors of them, zero-padded)
// as well as alpha; the other kinds ignore it.
template <int MR, int NV, typename TB = float>
KILN_AVX512 void Tile(int64_t k, float alpha, const float *a, int64_t lda, const TB *b, int64_t ldb,
                      float beta, float *c, int64_t ldc, __mmask16 tail, Prefetch pf,
                      const float *scale = nullptr) {
  // Every loop over MR or NV is unrolled, so the accumulators stay in
  // registers (GCC spills an array it indexes in a loop).
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      acc[r][j] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const TB *brow = b + p * ldb;
    if (p < pf.rows)
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j)
        if (sizeof(TB) > 1 || j == 0) // an int8 panel's row is one line
          _mm_prefetch(
              reinterpret_cast<const char *>(static_cast<const TB *>(pf.at) + p * ldb + 16 * j),
              _MM_HINT_T1);
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      bv[j] = LoadB(brow + 16 * j, j == NV - 1, tail);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + p]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j)
        acc[r][j] = _mm512_fmadd_ps(av, bv[j], acc[r][j]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  __m512 vs[NV]; // alpha times each column's scale (int8 B)
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j)
    if constexpr (std::is_same_v<TB, I8>)
      vs[j] = _mm512_mul_ps(_mm512_loadu_ps(scale + 16 * j), va);
    else
      vs[j] = va;
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      float *cp = c + r * ldc + 16 * j;
      const __mmask16 mask = j == NV - 1 ? tail : __mmask16(0xffff);
      __m512 out = _mm512_mul_ps(acc[r][j], vs[j]);
      if (beta != 0.0f) // beta 0 ignores C, even NaN garbage in it
        out = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask, cp), out);
      _mm512_mask_storeu_ps(cp, mask, out);
    }
}

// Rows [0, m) of one column panel of NV vectors, in tiles of kRowTile rows
// (the last one to five rows a smaller tile). Only the first tile issues
// `pf`'s requests: the later ones find B in cache. `scale` as in Tile.
template <int NV, typename TB = float>
KILN_AVX512 void Panel(int64_t m, int64_t k, float alpha, const float *a, int64_t lda, const TB *b,
                       int64_t ldb, float beta, float *c, int64_t ldc, __mmask16 tail, Prefetch pf,
                       const float *scale = nullptr) {
  int64_t r = 0;
  for (; r + kRowTile <= m; r += kRowTile, pf = Prefetch())
    Tile<kRowTile, NV, TB>(k, alpha, a + r * lda, lda, b, ldb, beta, c + r * ldc, ldc, tail, pf,
                           scale);
  const float *ar = a + r * lda;
  float *cr = c + r * ldc;
  switch (m - r) {
  case 5:
    Tile<5, NV, TB>(k, alpha, ar, lda, b, ldb, beta, cr, ldc, tail, pf, scale);
    break;
  case 4:
    Tile<4, NV, TB>(k, alpha, ar, lda, b, ldb, beta, cr, ldc, tail, pf, scale);
    break;
  case 3:
    Tile<3, NV, TB>(k, alpha, ar, lda, b, ldb, beta, cr, ldc, tail, pf, scale);
    break;
  case 2:
    Tile<2, NV, TB>(k, alpha, ar, lda, b, ldb, beta, cr, ldc, tail, pf, scale);
    break;
  case 1:
    Tile<1, NV, TB>(k, alpha, ar, lda, b, ldb, beta, cr, ldc, tail, pf, scale);
    break;
  default:
    break;
  }
}

// Whether this CPU runs the tiles; callers fall back to portable code.
inline bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  return has;
}

} // namespace kiln::kernels::tile
