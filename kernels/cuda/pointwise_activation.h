// Activations applied after a cuBLASLt GEMM where its epilogues cannot: the
// erf GELU and SiLU (cuBLASLt's GELU epilogue is the tanh form), every
// activation for f32 results (kept to precise libm math so f32 plans stay
// within 1e-5 of the CPU), and the gated MLP's act(gate) * up.
//
// Inputs are f32 accumulators (a GEMM's D in f32); results are rounded once
// to the output's type. All matrices are row-major and contiguous.
#pragma once

#include "kernels/cuda/float_elem.h"
#include "kernels/op_kinds.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

using kernels::Activation; // kernels/op_kinds.h

// out[r, c] = act(acc[r, c] + bias[c]) for r < rows, c < cols. out and bias
// have type `t` (f32, f16 or bf16); bias may be null (no bias). acc may be
// null (reads as zeros: a product with K = 0) and may alias out when t is
// f32. Returns the launch's error.
cudaError_t BiasActivation(Activation act, const float *acc, const void *bias, void *out,
                           FloatElem t, int64_t rows, int64_t cols, cudaStream_t stream);

// out[r, c] = act(h[r, c]) * h[r, f + c] for r < rows, c < f: h is the f32
// [rows, 2f] product of a gated MLP's fused gate/up projection, out [rows, f]
// has type `t` (f32, f16 or bf16). act is kSilu, kGelu or kGeluTanh.
cudaError_t GatedActivation(Activation act, const float *h, void *out, FloatElem t, int64_t rows,
                            int64_t f, cudaStream_t stream);

} // namespace kiln::kernels::cuda
