// CUDA kernel of the fused gelu op (docs/fused-ops.md): the exact (erf) form
// or the tanh approximation, computed in f32.
#pragma once

#include "kernels/cuda/fused_float.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// y = gelu(x) over n contiguous elements of `type` (f32, f16, bf16); y may
// equal x.
cudaError_t Gelu(FusedFloat type, bool tanh_form, const void *x, void *y, int64_t n,
                 cudaStream_t stream);

} // namespace kiln::kernels::cuda
