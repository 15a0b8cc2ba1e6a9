#include "kernels/cpu/products_gemm.h"

#include "kernels/cpu/products_gemm_small_m.h"
#include "kernels/cpu/products_packed_matrix.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace kiln::kernels {
namespace {

// BLAS takes int dims; plan shapes fit, and the op layer rejects larger ones.
blasint B(int64_t v) { return static_cast<blasint>(v); }

int g_current_threads = -1;

// Picks the thread count for one product of `flops` floating-point ops.
void UseThreadsFor(double flops) {
  int want = flops < kSmallGemmFlops ? 1 : GemmThreads();
  if (want != g_current_threads) {
    openblas_set_num_threads(want);
    g_current_threads = want;
  }
}

template <typename T>
void Gemv(bool trans_a, int64_t m, int64_t k, T alpha, const T *a, int64_t lda, const T *x,
          int64_t incx, T beta, T *y) {
  // y[m] = alpha * op(A)[m,k] x + beta * y, with A stored row-major.
  const int64_t rows = trans_a ? k : m, cols = trans_a ? m : k;
  const CBLAS_TRANSPOSE t = trans_a ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemv(CblasRowMajor, t, B(rows), B(cols), alpha, a, B(std::max<int64_t>(lda, 1)), x,
                B(incx), beta, y, 1);
  } else {
    cblas_dgemv(CblasRowMajor, t, B(rows), B(cols), alpha, a, B(std::max<int64_t>(lda, 1)), x,
                B(incx), beta, y, 1);
  }
}

} // namespace

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T *a,
          int64_t lda, const T *b, int64_t ldb, T beta, T *c, int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    // BLAS rejects some leading dimensions when K is 0; the product is zero.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    // A weight packed at plan load (kernels/cpu/products_packed_matrix.h): read it
    // there, for any number of rows.
    if (!trans_a) {
      if (const PackedMatrix *packed = FindPacked(b, k, n, ldb, trans_b)) {
        PackedGemm(m, a, lda, *packed, alpha, beta, c, ldc);
        return;
      }
    }
    // A few rows (a batched decode step): BLAS would repack all of B.
    if (!trans_a && !trans_b && m >= 2 && SmallMGemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
      return;
  }
  if (beta == T(0)) {
    // Some BLAS builds compute 0 * C, which keeps NaN garbage from a reused
    // arena buffer; start from zeros instead.
    for (int64_t i = 0; i < m; ++i)
      std::memset(c + i * ldc, 0, static_cast<size_t>(n) * sizeof(T));
  }
  UseThreadsFor(2.0 * double(m) * double(n) * double(k));
  if (m == 1) {
    // A single row (decode): y[n] = op(B)^T-ish GEMV, which BLAS runs faster
    // than a 1-row GEMM. Row of op(A) is a[0..k) with stride 1, or a column
    // of A (stride lda) when transposed.
    const int64_t incx = trans_a ? lda : 1;
    Gemv<T>(!trans_b, n, k, alpha, b, ldb, a, incx, beta, c);
    return;
  }
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, B(m), B(n), B(k), alpha, a, B(lda), b, B(ldb), beta, c,
                B(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, B(m), B(n), B(k), alpha, a, B(lda), b, B(ldb), beta, c,
                B(ldc));
  }
}

template <typename T>
void MatMul(const T *a, const std::vector<int64_t> &batch_a, const T *b,
            const std::vector<int64_t> &batch_b, const std::vector<int64_t> &batch_out, int64_t m,
            int64_t k, int64_t n, T *c) {
  int64_t count_a = 1, count_b = 1, count_out = 1;
  for (int64_t d : batch_a)
    count_a *= d;
  for (int64_t d : batch_b)
    count_b *= d;
  for (int64_t d : batch_out)
    count_out *= d;
  if (count_out == 0 || m == 0 || n == 0)
    return;

  if (count_b == 1 && count_a == count_out) {
    // Shared weight: every batch of A is contiguous, so stack them as rows.
    Gemm<T>(false, false, count_a * m, n, k, T(1), a, k, b, n, T(0), c, n);
    return;
  }
  // General case: one GEMM per output batch, with each operand's batch index
  // found by an odometer that steps its offsets (0 stride where broadcast).
  const size_t rank = batch_out.size();
  std::vector<int64_t> stride_a(rank, 0), stride_b(rank, 0);
  int64_t sa = m * k, sb = k * n;
  for (size_t d = rank; d-- > 0;) {
    const size_t lead_a = rank - batch_a.size(), lead_b = rank - batch_b.size();
    const int64_t da = d < lead_a ? 1 : batch_a[d - lead_a];
    const int64_t db = d < lead_b ? 1 : batch_b[d - lead_b];
    stride_a[d] = da == 1 ? 0 : sa;
    stride_b[d] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  std::vector<int64_t> counter(rank, 0);
  int64_t off_a = 0, off_b = 0;
  for (int64_t i = 0; i < count_out; ++i) {
    Gemm<T>(false, false, m, n, k, T(1), a + off_a, k, b + off_b, n, T(0), c + i * m * n, n);
    for (size_t d = rank; d-- > 0;) {
      off_a += stride_a[d];
      off_b += stride_b[d];
      if (++counter[d] < batch_out[d])
        break;
      off_a -= stride_a[d] * batch_out[d];
      off_b -= stride_b[d] * batch_out[d];
      counter[d] = 0;
    }
  }
}

template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float *, int64_t,
                          const float *, int64_t, float, float *, int64_t);
template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double *, int64_t,
                           const double *, int64_t, double, double *, int64_t);
template void MatMul<float>(const float *, const std::vector<int64_t> &, const float *,
                            const std::vector<int64_t> &, const std::vector<int64_t> &, int64_t,
                            int64_t, int64_t, float *);
template void MatMul<double>(const double *, const std::vector<int64_t> &, const double *,
                             const std::vector<int64_t> &, const std::vector<int64_t> &, int64_t,
                             int64_t, int64_t, double *);

} // namespace kiln::kernels
