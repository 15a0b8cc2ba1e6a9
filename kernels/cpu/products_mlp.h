// Fused MLP pieces on OpenBLAS, in f32: a linear layer with bias and
// activation, and a gated MLP (SwiGLU/GeGLU). Row-major, contiguous.
#pragma once

#include "kernels/cpu/pointwise_activation.h"

#include <cstdint>

namespace kiln::kernels {

// y[rows, n] = act(x[rows, k] @ w[k, n] + bias[n]); bias may be null. The
// bias is broadcast into y first so the GEMM accumulates onto it (beta = 1).
void Linear(const float *x, const float *w, const float *bias, float *y, int64_t rows, int64_t k,
            int64_t n, Activation act);

// Floats of scratch GatedMlp needs: rows are processed in blocks so the
// [block, 2f] intermediate stays bounded however long the sequence is.
int64_t GatedMlpScratchSize(int64_t rows, int64_t f);

// y[rows, n] = (act(x @ w_gate_up[:, :f]) * (x @ w_gate_up[:, f:])) @ w_down
// with w_gate_up [k, 2f] and w_down [f, n]. `scratch` holds
// GatedMlpScratchSize(rows, f) floats.
void GatedMlp(const float *x, const float *w_gate_up, const float *w_down, float *scratch, float *y,
              int64_t rows, int64_t k, int64_t f, int64_t n, Activation act);

} // namespace kiln::kernels
