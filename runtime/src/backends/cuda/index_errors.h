// Out-of-range indices found on the device. The index kernels
// (kernels/cuda/gather.h) check each index where they read it, without a
// round trip to the host: a bad one is recorded in a per-device IndexError
// record and its slice is zeroed (gather, gather_nd) or skipped
// (scatter_nd). Index operands that are host tensors are checked on the host
// instead, before anything is enqueued, with the CPU's messages.
//
// The record is read where the backend waits for its stream anyway
// (Synchronize, CopyToHost): TakeIndexError turns it into the op's
// InvalidArgument. Until then the run goes on, so the error surfaces at the
// next synchronization rather than at the op, and the results of that run
// are not to be used.
#pragma once

#include "kernels/cuda/gather.h"
#include "kiln/status.h"

#include <cuda_runtime_api.h>

namespace kiln::cuda {

// The current device's record, allocated (cudaMalloc) and zeroed on the
// first call for that device (which waits for `stream` once, so the record
// is clear before any stream's kernel can see it). A backend may call it at
// creation so no index op allocates later (e.g. while a CUDA graph is
// captured).
StatusOr<kernels::cuda::IndexError *> DeviceIndexErrors(cudaStream_t stream);

// Waits for `stream`; then, if a kernel recorded a bad index on the current
// device since the last call, clears the record and returns InvalidArgument
// naming the op, the index, its position and the dim. Ok otherwise (also
// when no index op ever ran on the device).
Status TakeIndexError(cudaStream_t stream);

} // namespace kiln::cuda
