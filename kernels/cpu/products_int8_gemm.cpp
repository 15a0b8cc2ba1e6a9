// Int8Gemm: int8 x int8 products on kI8x4 weights. AVX-512 VNNI tiles where
// the CPU has them (chosen at run time; this file is compiled for the
// baseline ISA), else the AVX2 path (int8_gemm_avx2.cpp) or portable loops.
#include "kernels/cpu/products_int8_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace kiln::kernels {
namespace {

#define KILN_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

constexpr int kRowTile = 6;          // rows of C per tile: 6 x 4 accumulators
constexpr int64_t kGroupBytes = 256; // one group of a panel: 64 columns x 4 rows
// Groups a tile asks L2 for ahead of the one it reads (8 KiB; past the
// panel's end into the next panel, which is the next in memory).
constexpr int64_t kPrefetchGroups = 32;
// Groups per depth block when more rows than one tile read a panel: 16 KiB,
// half of L1.
constexpr int64_t kDepthGroups = 64;

bool HasVnni() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vnni");
  return has;
}

// The 4 bytes of a quantized row at `p` as one int32 (memcpy: no aliasing).
inline int32_t Load4(const uint8_t *p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// C's tile of MR rows x NV vectors of 16 columns from the int32 sums `acc`:
// (acc - 128 * colsum) as f32 times a_scale[r] * scale, the last vector
// masked by `tail`.
template <int MR, int NV>
KILN_VNNI inline void StoreTile(__m512i (&acc)[MR][NV], const float *a_scale, const float *scale,
                                const int32_t *colsum, float *c, int64_t ldc, __mmask16 tail) {
  __m512i corr[NV];
  __m512 vs[NV];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j) {
    corr[j] = _mm512_slli_epi32(_mm512_loadu_si512(colsum + 16 * j), 7);
    vs[j] = _mm512_loadu_ps(scale + 16 * j);
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const __m512 sa = _mm512_set1_ps(a_scale[r]);
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      const __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][j], corr[j]));
      const __mmask16 mask = j == NV - 1 ? tail : __mmask16(0xffff);
      _mm512_mask_storeu_ps(c + r * ldc + 16 * j, mask, _mm512_mul_ps(v, _mm512_mul_ps(sa, vs[j])));
    }
  }
}

// A tile's int32 sums between depth blocks: row r's at part + r * 64.
struct Partial {
  int32_t *part = nullptr; // null: one block, the whole depth
  bool first = true, last = true;
};

// One tile: MR rows (aq, row stride lda) by NV vectors of the panel, over
// groups [g0, g1); the first `pf_groups` groups also ask L2 for the group
// kPrefetchGroups ahead. Sums start at zero (pt.first) or from pt.part, and
// end in C (pt.last) or in pt.part.
template <int MR, int NV>
KILN_VNNI void TileVnni(int64_t g0, int64_t g1, const uint8_t *aq, int64_t lda, const int8_t *panel,
                        int64_t pf_groups, const float *a_scale, const float *scale,
                        const int32_t *colsum, float *c, int64_t ldc, __mmask16 tail, Partial pt) {
  __m512i acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      acc[r][j] =
          pt.first ? _mm512_setzero_si512() : _mm512_loadu_si512(pt.part + r * kPanelCols + 16 * j);
  pf_groups += g0;
  for (int64_t g = g0; g < g1; ++g) {
    const int8_t *bg = panel + g * kGroupBytes;
    if (g < pf_groups)
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j)
        _mm_prefetch(reinterpret_cast<const char *>(bg + kPrefetchGroups * kGroupBytes + 64 * j),
                     _MM_HINT_T1);
    __m512i bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      bv[j] = _mm512_loadu_si512(bg + 64 * j);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512i av = _mm512_set1_epi32(Load4(aq + r * lda + 4 * g));
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j)
        acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], av, bv[j]);
    }
  }
  if (pt.last) {
    StoreTile<MR, NV>(acc, a_scale, scale, colsum, c, ldc, tail);
    return;
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      _mm512_storeu_si512(pt.part + r * kPanelCols + 16 * j, acc[r][j]);
}

// One row (decode): the whole depth in one pass, two groups a step into two
// sets of accumulators so that vpdpbusd's latency hides.
template <int NV>
KILN_VNNI void RowVnni(int64_t groups, const uint8_t *aq, const int8_t *panel, const float *a_scale,
                       const float *scale, const int32_t *colsum, float *c, __mmask16 tail) {
  __m512i acc[1][NV], acc2[NV];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j)
    acc[0][j] = acc2[j] = _mm512_setzero_si512();
  int64_t g = 0;
  for (; g + 2 <= groups; g += 2) {
    const int8_t *bg = panel + g * kGroupBytes;
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
      _mm_prefetch(reinterpret_cast<const char *>(bg + kPrefetchGroups * kGroupBytes + 64 * j),
                   _MM_HINT_T1);
    const __m512i a0 = _mm512_set1_epi32(Load4(aq + 4 * g));
    const __m512i a1 = _mm512_set1_epi32(Load4(aq + 4 * g + 4));
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      acc[0][j] = _mm512_dpbusd_epi32(acc[0][j], a0, _mm512_loadu_si512(bg + 64 * j));
      acc2[j] = _mm512_dpbusd_epi32(acc2[j], a1, _mm512_loadu_si512(bg + kGroupBytes + 64 * j));
    }
  }
  if (g < groups) {
    const int8_t *bg = panel + g * kGroupBytes;
    const __m512i a0 = _mm512_set1_epi32(Load4(aq + 4 * g));
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      acc[0][j] = _mm512_dpbusd_epi32(acc[0][j], a0, _mm512_loadu_si512(bg + 64 * j));
  }
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j)
    acc[0][j] = _mm512_add_epi32(acc[0][j], acc2[j]);
  StoreTile<1, NV>(acc, a_scale, scale, colsum, c, 0, tail);
}

// Rows [0, m) of groups [g0, g1) of one panel NV vectors wide, in tiles of
// kRowTile rows. Only the first tile asks for the memory ahead: the later
// ones find the block in cache. `part` (64 int32 a row, m rows) holds the
// sums between blocks, or is null (one block).
template <int NV>
KILN_VNNI void BlockVnni(int64_t m, int64_t g0, int64_t g1, const uint8_t *aq, int64_t lda,
                         const int8_t *panel, const float *a_scale, const float *scale,
                         const int32_t *colsum, float *c, int64_t ldc, __mmask16 tail,
                         int32_t *part, bool first, bool last) {
  int64_t r = 0, pf = g1 - g0;
  auto at = [&](int64_t row) {
    return Partial{part ? part + row * kPanelCols : nullptr, first, last};
  };
  for (; r + kRowTile <= m; r += kRowTile, pf = 0)
    TileVnni<kRowTile, NV>(g0, g1, aq + r * lda, lda, panel, pf, a_scale + r, scale, colsum,
                           c + r * ldc, ldc, tail, at(r));
  const uint8_t *ar = aq + r * lda;
  const float *sr = a_scale + r;
  float *cr = c + r * ldc;
  switch (m - r) {
  case 5:
    TileVnni<5, NV>(g0, g1, ar, lda, panel, pf, sr, scale, colsum, cr, ldc, tail, at(r));
    break;
  case 4:
    TileVnni<4, NV>(g0, g1, ar, lda, panel, pf, sr, scale, colsum, cr, ldc, tail, at(r));
    break;
  case 3:
    TileVnni<3, NV>(g0, g1, ar, lda, panel, pf, sr, scale, colsum, cr, ldc, tail, at(r));
    break;
  case 2:
    TileVnni<2, NV>(g0, g1, ar, lda, panel, pf, sr, scale, colsum, cr, ldc, tail, at(r));
    break;
  case 1:
    TileVnni<1, NV>(g0, g1, ar, lda, panel, pf, sr, scale, colsum, cr, ldc, tail, at(r));
    break;
  default:
    break;
  }
}

// Rows [0, m) of one panel NV vectors wide: one row in one pass; up to one
// row tile over the whole depth; more rows by depth blocks of
// kDepthGroups groups, which stay in L1 while every row tile reads them.
template <int NV>
KILN_VNNI void PanelVnni(int64_t m, int64_t groups, const uint8_t *aq, int64_t lda,
                         const int8_t *panel, const float *a_scale, const float *scale,
                         const int32_t *colsum, float *c, int64_t ldc, __mmask16 tail,
                         int32_t *part) {
  if (m == 1) {
    RowVnni<NV>(groups, aq, panel, a_scale, scale, colsum, c, tail);
    return;
  }
  if (m <= kRowTile || groups <= kDepthGroups) {
    BlockVnni<NV>(m, 0, groups, aq, lda, panel, a_scale, scale, colsum, c, ldc, tail, nullptr, true,
                  true);
    return;
  }
  for (int64_t g0 = 0; g0 < groups; g0 += kDepthGroups) {
    const int64_t g1 = std::min(groups, g0 + kDepthGroups);
    BlockVnni<NV>(m, g0, g1, aq, lda, panel, a_scale, scale, colsum, c, ldc, tail, part, g0 == 0,
                  g1 == groups);
  }
}

// Panels [j0, j1) of C with the VNNI tiles.
KILN_VNNI void PanelsVnni(int64_t m, const uint8_t *aq, const float *a_scale, const PackedMatrix &b,
                          int64_t j0, int64_t j1, float *c, int64_t ldc) {
  const int64_t n = b.n(), groups = (b.k() + 3) / 4, lda = QuantizedDepth(b.k());
  std::vector<int32_t> part(
      m > kRowTile && groups > kDepthGroups ? static_cast<size_t>(m * kPanelCols) : 0);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t col = j * kPanelCols, cols = std::min(kPanelCols, n - col);
    const int nv = static_cast<int>((cols + 15) / 16);
    const int64_t last = cols - 16 * (nv - 1);
    const __mmask16 tail = last == 16 ? __mmask16(0xffff) : __mmask16((1u << last) - 1);
    const int8_t *panel = b.panel_i8x4(j);
    const float *scale = b.scales() + col;
    const int32_t *colsum = b.col_sums() + col;
    switch (nv) {
    case 4:
      PanelVnni<4>(m, groups, aq, lda, panel, a_scale, scale, colsum, c + col, ldc, tail,
                   part.data());
      break;
    case 3:
      PanelVnni<3>(m, groups, aq, lda, panel, a_scale, scale, colsum, c + col, ldc, tail,
                   part.data());
      break;
    case 2:
      PanelVnni<2>(m, groups, aq, lda, panel, a_scale, scale, colsum, c + col, ldc, tail,
                   part.data());
      break;
    default:
      PanelVnni<1>(m, groups, aq, lda, panel, a_scale, scale, colsum, c + col, ldc, tail,
                   part.data());
      break;
    }
  }
}

// The same panels with plain loops: (aq - 128) * q summed directly in int32.
void PanelsPortable(int64_t m, const uint8_t *aq, const float *a_scale, const PackedMatrix &b,
                    int64_t j0, int64_t j1, float *c, int64_t ldc) {
  const int64_t n = b.n(), groups = (b.k() + 3) / 4, lda = QuantizedDepth(b.k());
  int32_t acc[kPanelCols];
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t col = j * kPanelCols, cols = std::min(kPanelCols, n - col);
    const int8_t *panel = b.panel_i8x4(j);
    const float *scale = b.scales() + col;
    for (int64_t i = 0; i < m; ++i) {
      const uint8_t *row = aq + i * lda;
      std::fill(acc, acc + kPanelCols, 0);
      for (int64_t g = 0; g < groups; ++g) {
        const int8_t *bg = panel + g * kGroupBytes;
        for (int64_t q = 0; q < kPanelCols; ++q)
          for (int t = 0; t < 4; ++t)
            acc[q] += (static_cast<int32_t>(row[4 * g + t]) - 128) * bg[q * 4 + t];
      }
      float *out = c + i * ldc + col;
      for (int64_t q = 0; q < cols; ++q)
        out[q] = static_cast<float>(acc[q]) * (a_scale[i] * scale[q]);
    }
  }
}

} // namespace

int64_t QuantizedDepth(int64_t k) { return (k + 3) / 4 * 4; }

void QuantizeRows(const float *a, int64_t m, int64_t k, int64_t lda, uint8_t *aq, float *a_scale) {
  const int64_t kq = QuantizedDepth(k);
  for (int64_t i = 0; i < m; ++i) {
    const float *row = a + i * lda;
    uint8_t *out = aq + i * kq;
    float mx = 0.0f;
    bool finite = true;
    for (int64_t p = 0; p < k; ++p) {
      finite &= std::isfinite(row[p]);
      mx = std::max(mx, std::fabs(row[p]));
    }
    std::fill(out + k, out + kq, uint8_t{128});
    if (!finite || mx == 0.0f) {
      a_scale[i] = finite ? 0.0f : std::nanf("");
      std::fill(out, out + k, uint8_t{128});
      continue;
    }
    const float s = mx / 127.0f;
    a_scale[i] = s;
    for (int64_t p = 0; p < k; ++p) {
      const float q = std::min(127.0f, std::max(-127.0f, std::nearbyint(row[p] / s)));
      out[p] = static_cast<uint8_t>(static_cast<int32_t>(q) + 128);
    }
  }
}

void Int8Gemm(int64_t m, const uint8_t *aq, const float *a_scale, const PackedMatrix &b, float *c,
              int64_t ldc) {
  if (b.elem() != PackedElem::kI8x4)
    return;
  if (!HasVnni()) {
    Int8GemmAvx2(m, aq, a_scale, b, c, ldc); // the portable loops where it cannot
    return;
  }
  ForPanels(m, b, [&](int64_t j0, int64_t j1) { PanelsVnni(m, aq, a_scale, b, j0, j1, c, ldc); });
}

void Int8GemmPortable(int64_t m, const uint8_t *aq, const float *a_scale, const PackedMatrix &b,
                      float *c, int64_t ldc) {
  if (b.elem() != PackedElem::kI8x4)
    return;
  ForPanels(m, b,
            [&](int64_t j0, int64_t j1) { PanelsPortable(m, aq, a_scale, b, j0, j1, c, ldc); });
}

} // namespace kiln::kernels
