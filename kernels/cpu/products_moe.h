// Mixture of experts in f32 (docs/fused-ops.md, moe): a softmax router, the
// top-k experts of each row, and each expert's gated MLP run only on the
// rows routed to it (gathered, one GEMM chain per expert, scattered back
// with the routing weight). Row-major, contiguous.
#pragma once

#include "kernels/cpu/pointwise_activation.h"

#include <cstdint>
#include <vector>

namespace kiln::kernels {

struct MoeDims {
  int64_t rows = 0, hidden = 0;  // x is [rows, hidden]
  int64_t experts = 0, ffn = 0;  // E, and F of each expert's [H, 2F] / [F, H]
  int64_t top_k = 1;             // 1 <= top_k <= experts
  bool normalize = false;        // divide the picked probabilities by their sum
  // Bytes per element of w_gate_up and w_down as stored: 4, or 2 for half
  // weights whose every expert matrix is packed (kernels/cpu/products_packed_matrix.h),
  // passed as they are: the products find them packed and never read them.
  int64_t weight_elem_bytes = 4;
};

// Each row's top_k experts (most probable first; ties: the lower index) and
// their weights: softmax(x @ router_w) over the experts, computed in f32,
// the picked probabilities renormalized when dims.normalize. expert and
// weight are [rows, top_k].
void MoeRoute(const float *x, const float *router_w, const MoeDims &dims, int32_t *expert,
              float *weight);

// y = sum over each row's picked experts of weight * gated_mlp_e(x), with
// w_gate_up [E, H, 2F] and w_down [E, F, H].
void Moe(const float *x, const float *router_w, const float *w_gate_up, const float *w_down,
         float *y, const MoeDims &dims, Activation act);

} // namespace kiln::kernels
