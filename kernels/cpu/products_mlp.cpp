#include "kernels/cpu/products_mlp.h"

#include "kernels/cpu/products_gemm.h"

#include <algorithm>

namespace kiln::kernels {
namespace {

// Rows per GatedMlp block: large enough that the GEMMs run at full speed
// (and multi-threaded), small enough that [block, 2f] is a few MiB.
constexpr int64_t kMlpBlockRows = 256;

} // namespace

void Linear(const float *x, const float *w, const float *bias, float *y, int64_t rows, int64_t k,
            int64_t n, Activation act) {
  if (rows <= 0 || n <= 0)
    return;
  float beta = 0.0f;
  if (bias != nullptr) {
    for (int64_t r = 0; r < rows; ++r)
      std::copy(bias, bias + n, y + r * n);
    beta = 1.0f;
  }
  Gemm<float>(false, false, rows, n, k, 1.0f, x, k, w, n, beta, y, n);
  if (act != Activation::kNone)
    Activate(act, y, y, rows * n);
}

int64_t GatedMlpScratchSize(int64_t rows, int64_t f) {
  return std::min(rows, kMlpBlockRows) * 2 * f;
}

void GatedMlp(const float *x, const float *w_gate_up, const float *w_down, float *scratch, float *y,
              int64_t rows, int64_t k, int64_t f, int64_t n, Activation act) {
  const int64_t f2 = 2 * f;
  for (int64_t r0 = 0; r0 < rows; r0 += kMlpBlockRows) {
    const int64_t m = std::min(kMlpBlockRows, rows - r0);
    Gemm<float>(false, false, m, f2, k, 1.0f, x + r0 * k, k, w_gate_up, f2, 0.0f, scratch, f2);
    // act(gate) * up overwrites the gate half of each row; the down
    // projection then reads those halves with leading dimension 2f.
    for (int64_t r = 0; r < m; ++r) {
      float *row = scratch + r * f2;
      GatedActivation(act, row, row + f, row, f);
    }
    Gemm<float>(false, false, m, n, f, 1.0f, scratch, f2, w_down, n, 0.0f, y + r0 * n, n);
  }
}

} // namespace kiln::kernels
