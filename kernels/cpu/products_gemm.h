// Matrix products through OpenBLAS: a row-major GEMM wrapper and numpy-style
// batched MatMul with broadcasting over leading (batch) dims.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::kernels {

// Caps the threads BLAS may use (default: all cores). Products smaller than
// kSmallGemmFlops always run on one thread: splitting them costs more in
// wake-ups than it saves, and on a busy machine BLAS threads that spin for
// an occupied core make small products tens of times slower.
inline constexpr double kSmallGemmFlops = 1 << 24;
void SetGemmThreads(int threads);
int GemmThreads();

// C[M,N] = alpha * op(A) * op(B) + beta * C, row-major, op = transpose when
// the flag is set. Leading dimensions are in elements. Safe for any zero
// sizes (C is scaled by beta, or zeroed when beta is 0, if K is 0).
// T is float or double.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T *a,
          int64_t lda, const T *b, int64_t ldb, T beta, T *c, int64_t ldc);

// c[batch..., M, N] = a[batch_a..., M, K] @ b[batch_b..., K, N], where
// batch_a and batch_b broadcast (right-aligned) to batch_out. All three are
// contiguous. A 2-D weight (batch_b empty or all ones) becomes one GEMM over
// the flattened rows of `a`. T is float or double.
template <typename T>
void MatMul(const T *a, const std::vector<int64_t> &batch_a, const T *b,
            const std::vector<int64_t> &batch_b, const std::vector<int64_t> &batch_out, int64_t m,
            int64_t k, int64_t n, T *c);

} // namespace kiln::kernels
