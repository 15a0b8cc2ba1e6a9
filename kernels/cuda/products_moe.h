// Mixture of experts on the device (docs/fused-ops.md, moe): the router, each
// row's top-k experts, and grouped products that run each expert's gated MLP
// only on the rows routed to it.
//
// Five launches, all sized from the shape alone so a CUDA graph can hold
// them (the routing is data, never a host decision):
//   route   one block per row: x @ router_w in f32, softmax, the top k
//           (ties to the lower index), renormalized when asked;
//   align   one block: rows per expert, each expert's rows padded to whole
//           tiles of kMoeTileRows, the tile -> expert map and the tile count;
//   up      grouped product over the used tiles: act(x Wg_e) * (x Wu_e),
//           rounded once to the operand type (as gated_mlp on the device);
//   down    grouped product of that with Wd_e into f32 partial sums, the
//           sum split over blocks when the tiles alone cannot fill the device;
//   combine each row's experts, weighted, summed in a fixed order (so a row
//           gets the same result whatever else the batch holds), rounded once.
// Blocks of tiles past the used count return at once; an expert that no
// row picked costs nothing. Half operands whose widths are multiples of 8
// run on the tensor cores (f32 accumulators); f32 operands, and half ones of
// other widths, on exact f32 FMAs.
#pragma once

#include "kernels/cuda/float_elem.h"
#include "kernels/op_kinds.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

inline constexpr int64_t kMoeTileRows = 64;

struct MoeArgs {
  FloatElem t = FloatElem::kF32;      // x, the weights and y: f32, f16 or bf16
  int64_t rows = 0, hidden = 0;       // x and y are [rows, hidden], contiguous
  int64_t experts = 0, ffn = 0;       // E; F of w_gate_up [E, H, 2F], w_down [E, F, H]
  int64_t top_k = 1;                  // 1..experts
  bool normalize = false;             // picked probabilities divided by their sum
  Activation act = Activation::kSilu; // kSilu, kGelu or kGeluTanh
  const void *x = nullptr, *router_w = nullptr, *w_gate_up = nullptr, *w_down = nullptr;
  void *y = nullptr;
  int sm_count = 0; // the device's; sets how the down product splits
};

// Bytes of device scratch Moe needs for these arguments (a function of the
// shape and sm_count only); 0 when rows is 0.
uint64_t MoeScratchBytes(const MoeArgs &a);

// Enqueues the op on `stream`. `scratch` holds MoeScratchBytes(a) bytes,
// 256-byte aligned. Returns cudaErrorInvalidValue for arguments outside the
// contract above, else the first launch error.
cudaError_t Moe(const MoeArgs &a, void *scratch, cudaStream_t stream);

} // namespace kiln::kernels::cuda
