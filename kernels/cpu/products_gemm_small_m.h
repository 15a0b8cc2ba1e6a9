// C[M,N] = alpha * A[M,K] @ B[K,N] + beta * C (row-major, no transposes) for
// few rows: a batched decode step. BLAS sgemm packs all of B on every call,
// which for M of 2..32 costs more than the product; this kernel streams B
// once per column panel and keeps a tile of C in registers.
#pragma once

#include <cstdint>

namespace kiln::kernels {

// The most rows SmallMGemm takes.
inline constexpr int64_t kSmallGemmMaxRows = 32;

// Computes the product and returns true when the CPU has AVX-512F and
// 1 <= m <= kSmallGemmMaxRows; otherwise returns false and touches nothing.
bool SmallMGemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

} // namespace kiln::kernels
