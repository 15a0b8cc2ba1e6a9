// Row-major GEMMs on cuBLASLt, for the product ops (ops_products.cpp).
//
// Layout: kiln's tensors are row-major and cuBLASLt's native order is
// column-major, so a row-major D = op(A) op(B) runs as the column-major
// D^T = op(B)^T op(A)^T: the operands swap and every matrix is described as
// stored, with no copy. The alternative (CUBLASLT_ORDER_ROW layouts) is
// covered by far fewer kernels in cuBLASLt's heuristics, and its bias
// epilogue would broadcast along the wrong dim: in the transposed problem
// D^T has N rows, so a bias [N] per output column is exactly cuBLASLt's
// "bias per row of D".
//
// Precision: f32 runs with CUBLAS_COMPUTE_32F (never TF32), f16 and bf16
// with CUBLAS_COMPUTE_32F and f32 scales (fp32 accumulation, split-K
// partial sums reduced in f32, never in the half output type), f64 with
// CUBLAS_COMPUTE_64F.
//
// Plans: the matmul descriptor, the four layouts and the heuristic's
// algorithm are built once per problem (dims, leading dims, batch strides,
// dtypes, epilogue, pointer alignments, device) and cached for the life of
// the process, so the steady state makes no heuristic query and no
// descriptor allocation (as CUDA graph capture will need). For products of
// at most 16 rows (decode steps) the plan times the heuristic's first 8
// algorithms once, on the first call's operands with L2 flushed between
// runs, and keeps the fastest: for these the first choice streamed the
// weights at 50-70% of the bandwidth (docs/benchmarks.md). Not while the
// stream is being captured, nor when beta is not 0. Only with KILN_LT_TUNE=1
// until it has run on the device (docs/gpu.md, "Pending kernels").
#pragma once

#include "core/kernel.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

#include <cstdint>

namespace kiln::cuda {

// What cuBLASLt applies to alpha * op(A) op(B) + beta * C before storing D.
// GELU is cuBLASLt's tanh approximation.
enum class LtEpilogue : uint8_t { kNone, kBias, kRelu, kReluBias, kGeluTanh, kGeluTanhBias };

// One row-major product, batched with strides:
//   D[i] = epilogue(alpha * op(A[i]) op(B[i]) + beta * D[i] (+ bias)),
// op(A) [M, K], op(B) [K, N], D [M, N], for i < batch. C is D itself (beta
// accumulates onto what D holds). Leading dims and strides are in elements;
// a zero stride on A or B repeats that operand across the batch.
struct LtGemmShape {
  DType ab = DType::kF32; // A and B: f32, f16, bf16 or f64
  DType d = DType::kF32;  // D (and the bias): ab, or f32 for f16/bf16 operands
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false; // A stored [K, M], B stored [N, K]
  int64_t lda = 0, ldb = 0, ldd = 0;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  LtEpilogue epilogue = LtEpilogue::kNone;
};

struct LtGemmArgs {
  const void *a = nullptr;
  const void *b = nullptr;
  void *d = nullptr;
  const void *bias = nullptr; // [N] of D's type, for the *Bias epilogues
  double alpha = 1, beta = 0; // passed to cuBLASLt in the scale type
};

// Enqueues the product on ctx's stream with ctx.workspace as cuBLASLt's
// workspace. M, N and K must be positive (callers handle empty products:
// cuBLASLt does not define them). Fails with InvalidArgument on an
// inconsistent shape, Unimplemented when cuBLASLt has no algorithm for it,
// Internal on a cuBLASLt error.
Status LtGemm(ExecContext &ctx, const LtGemmShape &shape, const LtGemmArgs &args);

// Whether `bias` (non-null) may go to a *Bias epilogue. cuBLASLt's alignment
// preferences cover A, B, C and D but not the bias, and its kernels may
// assume a 16-byte aligned bias; callers add a less aligned bias themselves.
bool LtBiasAligned(const void *bias);

} // namespace kiln::cuda
