// SmallMGemm: register-tiled AVX-512 product for few rows. The function is
// compiled for AVX-512 only (target attributes) and chosen at run time, so
// the rest of the library keeps its baseline ISA.
#include "kernels/cpu/products_gemm_small_m.h"

#include "kernels/cpu/products_gemm_tile.h"
#include "kernels/cpu/parallel.h"

#include <algorithm>

namespace kiln::kernels {
namespace {

using namespace tile;

KILN_AVX512 void Product(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  // Column panels outermost: a panel of B (k x 64 floats) is read from
  // memory once and from cache by the later row tiles.
  // B's rows are ldb apart, often more than a page, where the hardware
  // prefetcher stops; the first row tile fetches a few rows ahead by hand.
  const int64_t ahead = std::max<int64_t>(0, k - kPrefetchRows);
  int64_t j = 0;
  for (; j + 16 * kVecTile <= n; j += 16 * kVecTile)
    Panel<kVecTile>(m, k, alpha, a, lda, b + j, ldb, beta, c + j, ldc, 0xffff,
                    {b + j + kPrefetchRows * ldb, ahead});
  for (; j < n; j += 16) {
    const int64_t left = n - j;
    const __mmask16 tail = left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
    Panel<1>(m, k, alpha, a, lda, b + j, ldb, beta, c + j, ldc, tail,
             {b + j + kPrefetchRows * ldb, ahead});
  }
}

} // namespace

bool SmallMGemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m < 1 || m > kSmallGemmMaxRows || n < 1 || k < 1 || !HasAvx512())
    return false;
  // Threads take whole 64-column panels; a product under ~1 MFLOP per
  // thread is not worth waking one.
  const int64_t panels = (n + 63) / 64;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 19) / (2 * m * k * 64));
  ParallelFor(panels, grain, [&](int64_t begin, int64_t end) {
    const int64_t j0 = begin * 64, j1 = std::min(n, end * 64);
    Product(m, j1 - j0, k, alpha, a, lda, b + j0, ldb, beta, c + j0, ldc);
  });
  return true;
}

} // namespace kiln::kernels
