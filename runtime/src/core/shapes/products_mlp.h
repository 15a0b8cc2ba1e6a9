// What the fused MLP ops' kernels need from their attributes and operands,
// shared by their shape rules (core/shapes/products_mlp.cpp) and every
// backend's kernels (docs/fused-ops.md).
#pragma once

#include "core/op_attrs.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace kiln {

enum class FusedActivation { kNone, kRelu, kGelu, kGeluTanh, kSilu };

// gelu's `approximate`: none (erf) or tanh, as ONNX Gelu spells it.
StatusOr<FusedActivation> GeluActivation(const OpAttrs &attrs);
// linear's `activation`: none, relu, gelu, gelu_tanh or silu.
StatusOr<FusedActivation> LinearActivation(const OpAttrs &attrs);
// gated_mlp's `activation` on the gate: silu, gelu or gelu_tanh.
StatusOr<FusedActivation> GatedMlpActivation(const OpAttrs &attrs);

// linear_q8's and gated_mlp_q8's `activations`: absent or "f32" (false:
// weight-only int8, f32 products), or "int8" (true: activation rows
// quantized too, int8 x int8 products).
StatusOr<bool> Int8Activations(std::string_view op, const OpAttrs &attrs);

// moe's dims (docs/fused-ops.md): x [..., H] as [rows, H], router_w
// [H, E], w_gate_up [E, H, 2F], w_down [E, F, H]; every operand checked.
struct MoeShape {
  int64_t rows = 0, hidden = 0, experts = 0, ffn = 0, top_k = 1;
  bool normalize = false;
};
StatusOr<MoeShape> ResolveMoe(const OpAttrs &attrs, const std::vector<const TensorView *> &in);

// x [..., K] as [rows, K]; the result shape is x's with the last dim `n`.
struct LinearDims {
  int64_t rows = 0, k = 0;
  Shape out;
};
// The leading dims flatten into GEMM rows because x is contiguous.
LinearDims LinearDimsOf(const TensorView &x, int64_t n);

} // namespace kiln
