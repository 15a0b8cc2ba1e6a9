// PackedGemm: products whose right operand is a PackedMatrix. AVX-512 tiles
// where the CPU has them, else AVX2 and FMA tiles (chosen at run time),
// portable loops on CPUs with neither.
#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/products_gemm_tile.h"
#include "kernels/cpu/products_gemm_tile_avx2.h"
#include "kernels/cpu/products_packed_matrix.h"

#include <algorithm>
#include <type_traits>

namespace kiln::kernels {
namespace {

using namespace tile;

// Rows of a panel per block when several rows of A read it: 256 rows of 64
// floats (64 KiB) stay in L2 while every row tile of C reads them, and the
// first tile asks for the next block meanwhile, so that block's memory
// latency hides behind the other tiles' arithmetic. C's tiles are reloaded
// once a block; past 64 rows, where the weight's reading is a small part of
// the time, blocks of 512 rows halve those reloads. (Measured on the 1.1B
// Llama's shapes: 64 or 128 rows were slower at 16 rows of A, 256 rows 1-3%
// slower than 512 at 256 rows of A.)
constexpr int64_t kDepthBlock = 256;
constexpr int64_t kManyRows = 64;
constexpr int64_t kDeepBlock = 512;

// One panel of C for the rows in [0, m), NV vectors wide; `scale` is the
// panel's column scales (int8 B) or null.
template <int NV, typename TB>
KILN_AVX512 void PanelAvx512(int64_t m, int64_t k, float alpha, const float *a, int64_t lda,
                             const TB *panel, float beta, float *c, int64_t ldc, __mmask16 tail,
                             const float *scale) {
  if (m == 1) {
    // One row reads each row of B once: the whole depth in one pass,
    // fetching a few rows ahead (past the panel's end into the next panel,
    // which is the next in memory).
    Tile<1, NV, TB>(k, alpha, a, lda, panel, kPanelCols, beta, c, ldc, tail,
                    {panel + kPrefetchRows * kPanelCols, k}, scale);
    return;
  }
  const int64_t block = m > kManyRows ? kDeepBlock : kDepthBlock;
  for (int64_t p0 = 0; p0 < k; p0 += block) {
    const int64_t depth = std::min(block, k - p0);
    const TB *bp = panel + p0 * kPanelCols;
    const float be = p0 == 0 ? beta : 1.0f; // later blocks accumulate
    Panel<NV, TB>(m, depth, alpha, a + p0, lda, bp, kPanelCols, be, c, ldc, tail,
                  {bp + depth * kPanelCols, block}, scale);
  }
}

// The column scales of B's panel at column `col` (int8 B), or null.
inline const float *ScalesAt(const PackedMatrix &b, int64_t col) {
  return b.scales() != nullptr ? b.scales() + col : nullptr;
}

// Panels [j0, j1) of C; `panel_of(j)` is panel j of B (f32, bf16, f16 or
// int8).
template <typename PanelOf>
KILN_AVX512 void PanelsAvx512(int64_t m, const float *a, int64_t lda, const PackedMatrix &b,
                              PanelOf panel_of, int64_t j0, int64_t j1, float alpha, float beta,
                              float *c, int64_t ldc) {
  const int64_t k = b.k(), n = b.n();
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t col = j * kPanelCols, cols = std::min(kPanelCols, n - col);
    const int nv = static_cast<int>((cols + 15) / 16);
    const int64_t last = cols - 16 * (nv - 1);
    const __mmask16 tail = last == 16 ? __mmask16(0xffff) : __mmask16((1u << last) - 1);
    const auto *panel = panel_of(j);
    const float *scale = ScalesAt(b, col);
    switch (nv) {
    case 4:
      PanelAvx512<4>(m, k, alpha, a, lda, panel, beta, c + col, ldc, tail, scale);
      break;
    case 3:
      PanelAvx512<3>(m, k, alpha, a, lda, panel, beta, c + col, ldc, tail, scale);
      break;
    case 2:
      PanelAvx512<2>(m, k, alpha, a, lda, panel, beta, c + col, ldc, tail, scale);
      break;
    default:
      PanelAvx512<1>(m, k, alpha, a, lda, panel, beta, c + col, ldc, tail, scale);
      break;
    }
  }
}

// One panel of C (its first `cols` columns) for the rows in [0, m) with the
// AVX2 tiles: one row as a whole-panel tile, several rows by depth blocks
// as PanelAvx512 does, each block in four 16-column stripes whose 16 KiB
// stay in L1 while every row tile reads them. `scale` as in PanelAvx512.
template <typename TB>
KILN_AVX2 void PanelAvx2(int64_t m, int64_t k, float alpha, const float *a, int64_t lda,
                         const TB *panel, float beta, float *c, int64_t ldc, int cols,
                         const float *scale) {
  if (m == 1) {
    Tile2<1, 8, TB>(k, alpha, a, lda, panel, kPanelCols, beta, c, ldc, cols,
                    {panel + kPrefetchRows * kPanelCols, k}, scale);
    return;
  }
  constexpr int kStripe = 16;
  const int64_t block = m > kManyRows ? kDeepBlock : kDepthBlock;
  for (int64_t p0 = 0; p0 < k; p0 += block) {
    const int64_t depth = std::min(block, k - p0);
    const TB *bp = panel + p0 * kPanelCols;
    const float be = p0 == 0 ? beta : 1.0f; // later blocks accumulate
    for (int s = 0; s * kStripe < cols; ++s)
      Stripe2(m, depth, alpha, a + p0, lda, bp + s * kStripe, kPanelCols, be, c + s * kStripe, ldc,
              std::min(kStripe, cols - s * kStripe), {bp + depth * kPanelCols + s * kStripe, block},
              scale != nullptr ? scale + s * kStripe : nullptr);
  }
}

template <typename PanelOf>
KILN_AVX2 void PanelsAvx2(int64_t m, const float *a, int64_t lda, const PackedMatrix &b,
                          PanelOf panel_of, int64_t j0, int64_t j1, float alpha, float beta,
                          float *c, int64_t ldc) {
  const int64_t k = b.k(), n = b.n();
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t col = j * kPanelCols;
    const int cols = static_cast<int>(std::min(kPanelCols, n - col));
    PanelAvx2(m, k, alpha, a, lda, panel_of(j), beta, c + col, ldc, cols, ScalesAt(b, col));
  }
}

// The same panels with plain loops, for CPUs without AVX-512 or AVX2.
inline float Widened(float v) { return v; }
inline float Widened(Bf16 v) { return BFloat16ToFloat(v.bits); }
inline float Widened(F16 v) { return HalfToFloat(v.bits); }
inline float Widened(I8 v) { return static_cast<float>(v.v); }

template <typename PanelOf>
void PanelsPortable(int64_t m, const float *a, int64_t lda, const PackedMatrix &b, PanelOf panel_of,
                    int64_t j0, int64_t j1, float alpha, float beta, float *c, int64_t ldc) {
  const int64_t k = b.k(), n = b.n();
  float acc[kPanelCols];
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t col = j * kPanelCols, cols = std::min(kPanelCols, n - col);
    const auto *panel = panel_of(j);
    using TB = std::remove_cv_t<std::remove_pointer_t<decltype(panel)>>;
    const float *scale = ScalesAt(b, col);
    for (int64_t i = 0; i < m; ++i) {
      std::fill(acc, acc + kPanelCols, 0.0f);
      for (int64_t p = 0; p < k; ++p) {
        const float av = a[i * lda + p];
        const auto *row = panel + p * kPanelCols;
        for (int64_t q = 0; q < kPanelCols; ++q)
          acc[q] += av * Widened(row[q]);
      }
      if constexpr (std::is_same_v<TB, I8>)
        for (int64_t q = 0; q < cols; ++q)
          acc[q] *= scale[q];
      float *out = c + i * ldc + col;
      for (int64_t q = 0; q < cols; ++q)
        out[q] = alpha * acc[q] + (beta == 0.0f ? 0.0f : beta * out[q]);
    }
  }
}

// Panels [j0, j1) of C = alpha * A @ (Q diag(scales)) + beta * C for a
// kI8x4 B, which is Int8Gemm's (kernels/cpu/products_int8_gemm.h): plain loops, so
// that a PackedGemm that is handed one anyway is right, if slow.
void PanelsI8x4Portable(int64_t m, const float *a, int64_t lda, const PackedMatrix &b, int64_t j0,
                        int64_t j1, float alpha, float beta, float *c, int64_t ldc) {
  const int64_t k = b.k(), n = b.n();
  float acc[kPanelCols];
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t col = j * kPanelCols, cols = std::min(kPanelCols, n - col);
    const int8_t *panel = b.panel_i8x4(j);
    const float *scale = b.scales() + col;
    for (int64_t i = 0; i < m; ++i) {
      std::fill(acc, acc + kPanelCols, 0.0f);
      for (int64_t p = 0; p < k; ++p) {
        const float av = a[i * lda + p];
        const int8_t *group = panel + (p / 4) * 4 * kPanelCols + p % 4;
        for (int64_t q = 0; q < kPanelCols; ++q)
          acc[q] += av * static_cast<float>(group[q * 4]);
      }
      float *out = c + i * ldc + col;
      for (int64_t q = 0; q < cols; ++q)
        out[q] = alpha * (acc[q] * scale[q]) + (beta == 0.0f ? 0.0f : beta * out[q]);
    }
  }
}

// Runs `panels(panel_of)` with panel_of(j) = B's panel j in its element type
// (not for kI8x4, which the callers take to PanelsI8x4Portable).
template <typename Panels> void WithPanels(const PackedMatrix &b, Panels &&panels) {
  switch (b.elem()) {
  case PackedElem::kBF16:
    panels([&b](int64_t j) { return b.panel_as<Bf16>(j); });
    break;
  case PackedElem::kF16:
    panels([&b](int64_t j) { return b.panel_as<F16>(j); });
    break;
  case PackedElem::kI8:
    panels([&b](int64_t j) { return b.panel_as<I8>(j); });
    break;
  case PackedElem::kF32:
    panels([&b](int64_t j) { return b.panel(j); });
    break;
  case PackedElem::kI8x4:
    break;
  }
}

// Whether B is kI8x4; if so, C is computed by PanelsI8x4Portable.
bool I8x4Product(int64_t m, const float *a, int64_t lda, const PackedMatrix &b, float alpha,
                 float beta, float *c, int64_t ldc) {
  if (b.elem() != PackedElem::kI8x4)
    return false;
  ForPanels(m, b, [&](int64_t j0, int64_t j1) {
    PanelsI8x4Portable(m, a, lda, b, j0, j1, alpha, beta, c, ldc);
  });
  return true;
}

} // namespace

void PackedGemm(int64_t m, const float *a, int64_t lda, const PackedMatrix &b, float alpha,
                float beta, float *c, int64_t ldc) {
  if (I8x4Product(m, a, lda, b, alpha, beta, c, ldc))
    return;
  if (!HasAvx512()) {
    if (!PackedGemmAvx2(m, a, lda, b, alpha, beta, c, ldc))
      PackedGemmPortable(m, a, lda, b, alpha, beta, c, ldc);
    return;
  }
  WithPanels(b, [&](auto panel_of) {
    ForPanels(m, b, [&](int64_t j0, int64_t j1) {
      PanelsAvx512(m, a, lda, b, panel_of, j0, j1, alpha, beta, c, ldc);
    });
  });
}

bool PackedGemmAvx2(int64_t m, const float *a, int64_t lda, const PackedMatrix &b, float alpha,
                    float beta, float *c, int64_t ldc) {
  if (!HasAvx2Fma())
    return false;
  if (I8x4Product(m, a, lda, b, alpha, beta, c, ldc))
    return true;
  WithPanels(b, [&](auto panel_of) {
    ForPanels(m, b, [&](int64_t j0, int64_t j1) {
      PanelsAvx2(m, a, lda, b, panel_of, j0, j1, alpha, beta, c, ldc);
    });
  });
  return true;
}

void PackedGemmPortable(int64_t m, const float *a, int64_t lda, const PackedMatrix &b, float alpha,
                        float beta, float *c, int64_t ldc) {
  if (I8x4Product(m, a, lda, b, alpha, beta, c, ldc))
    return;
  WithPanels(b, [&](auto panel_of) {
    ForPanels(m, b, [&](int64_t j0, int64_t j1) {
      PanelsPortable(m, a, lda, b, panel_of, j0, j1, alpha, beta, c, ldc);
    });
  });
}

} // namespace kiln::kernels
