// MatMul and Gemm operands resolved to the dims of their products, shared by
// the shape rules (core/shapes/products.cpp) and every backend's kernels, so
// both check the operands the same way.
#pragma once

#include "core/kernel.h"

#include <cstdint>

namespace kiln {

// MatMul operands (numpy semantics) reduced to batch dims plus one
// [M, K] x [K, N] product per batch entry.
struct MatMulDims {
  Shape batch_a, batch_b, batch_out;
  int64_t m = 0, k = 0, n = 0;
  Shape out;
};
StatusOr<MatMulDims> ResolveMatMul(const TensorView &a, const TensorView &b);

// Gemm: Y [M, N] = alpha * op(A) op(B) + beta * C, with C broadcasting to
// [M, N]; in = {A, B, C?}.
struct GemmDims {
  bool trans_a, trans_b;
  int64_t m, k, n;
};
StatusOr<GemmDims> ResolveGemm(const OpAttrs &attrs, const Inputs &in);

} // namespace kiln
