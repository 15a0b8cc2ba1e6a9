// Pointwise activations of transformer MLPs, in f32, for the fused linear,
// gated MLP and gelu ops.
#pragma once

#include "kernels/op_kinds.h"

#include <cstdint>

namespace kiln::kernels {

// Activation: kernels/op_kinds.h.

// y = act(x); y may equal x (in place). Relu passes NaN through like Relu.
void Activate(Activation act, const float *x, float *y, int64_t n);

// out = act(gate) * up, the middle of a gated MLP (SwiGLU, GeGLU); out may
// equal gate or up.
void GatedActivation(Activation act, const float *gate, const float *up, float *out, int64_t n);

} // namespace kiln::kernels
