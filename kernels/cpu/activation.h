// Pointwise activations of transformer MLPs, in f32, for the fused linear,
// gated MLP and gelu ops.
#pragma once

#include <cstdint>

namespace kiln::kernels {

// kGelu is the exact (erf) form, kGeluTanh the tanh approximation.
enum class Activation { kNone, kRelu, kGelu, kGeluTanh, kSilu };

// y = act(x); y may equal x (in place). Relu passes NaN through like Relu.
void Activate(Activation act, const float *x, float *y, int64_t n);

// out = act(gate) * up, the middle of a gated MLP (SwiGLU, GeGLU); out may
// equal gate or up.
void GatedActivation(Activation act, const float *gate, const float *up, float *out, int64_t n);

} // namespace kiln::kernels
