// Skinny products for decode steps: Y[M, N] = X[M, K] W[K, N] for M of 1 to
// kGemvMaxRows rows, with W row-major as the plan stores a linear's weight.
// Such products read every weight once and do little math per byte, so they
// are bound by memory bandwidth; a GEMM library tiles them for large M and
// reaches about half the bandwidth there. These kernels stream W's rows
// with 16-byte loads, accumulate in f32 and round to the output type once,
// with the linear's bias and activation, or the gated MLP's
// act(gate) * up, in the epilogue.
//
// Precision: f16 and bf16 operands are widened to f32 and every sum is
// accumulated in f32 (on the tensor cores, with f32 accumulators, for 5 to
// 16 rows); f32 operands are exact f32 FMAs (no TF32).
#pragma once

#include "kernels/cuda/pointwise_activation.h"
#include "kernels/cuda/float_elem.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

inline constexpr int64_t kGemvMaxRows = 16;

// One product. Strides are in elements; every matrix is row-major.
//   plain: y[r, c] = act(sum_k x[r, k] w[k, c] + bias[c])          c < n
//   gated: y[r, c] = act(sum_k x[r, k] w[k, c]) * sum_k x[r, k] w[k, n + c]
// (gated: w is a gated MLP's fused [K, 2n] gate/up weight, y its [M, n]
// input to the down projection; no bias).
struct GemvArgs {
  FloatElem t = FloatElem::kF32; // x, w, bias and y: f32, f16 or bf16
  int64_t m = 0;                 // rows of x and y, 1..kGemvMaxRows
  int64_t n = 0;                 // columns of y
  int64_t k = 0;                 // length of each sum, > 0
  const void *x = nullptr;
  int64_t ldx = 0;
  const void *w = nullptr;
  int64_t ldw = 0;            // at least n (plain) or 2n (gated)
  const void *bias = nullptr; // [n], or null
  void *y = nullptr;
  int64_t ldy = 0;
  Activation act = Activation::kNone; // gated: kSilu, kGelu or kGeluTanh
  bool gated = false;
};

// Enqueues the product on `stream` as one kernel, for the current device.
// Where the column tiles are too few to fill the device, K is split across
// the blocks of a thread block cluster (compute capability 9.0 and up).
// Returns cudaErrorInvalidValue for arguments outside the contract above,
// else the launch's error.
cudaError_t Gemv(const GemvArgs &a, cudaStream_t stream);

} // namespace kiln::kernels::cuda
