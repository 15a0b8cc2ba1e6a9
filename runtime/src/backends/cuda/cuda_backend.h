// The CUDA backend: device memory from cudaMalloc (never managed memory),
// the plan's weights copied to the device once, kernels from the CUDA kernel
// table run in order on one non-blocking stream with one cuBLASLt handle.
// This header names no CUDA type, so the registry compiles without the
// toolkit's headers.
#pragma once

#include "core/backend.h"

#include <memory>

namespace kiln::cuda {

// The CUDA backend's scratch memory, for OpScratch (cuda_util.h): a buffer
// valid until the next call, grown when too small.
class ScratchOwner {
public:
  virtual ~ScratchOwner() = default;
  virtual StatusOr<void *> Scratch(uint64_t bytes) = 0;
  virtual uint64_t scratch_bytes() const = 0;
};

// The CUDA kernels (cuda_kernels.h's families). Building the table touches
// no device, so a machine without a GPU can check a plan against it.
const KernelTable &CudaKernels();

// CUDA devices visible to this process; 0 when there is no driver, no
// device, or the driver is older than the runtime this kiln was built with.
int CudaDeviceCount();

// A backend on device `device` (cuda:N). InvalidArgument "no CUDA device
// visible: ..." when there is none, or naming the range when `device` is
// out of it; Internal for a failing CUDA or cuBLASLt call.
StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(int device);

} // namespace kiln::cuda
