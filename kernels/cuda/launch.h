// Kernel launches that may start before the kernel ahead of them on the
// stream has finished (programmatic dependent launch, Hopper and later):
// the launch and the blocks' setup overlap the previous kernel's tail, and
// each block waits (WaitForPriorKernels) before it touches memory. For the
// small kernels of a decode step, whose launch gaps a CUDA graph keeps.
// Off unless SetProgrammaticLaunch(true); launched without it, the wait is
// a no-op and the launch is an ordinary one.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

namespace kiln::kernels::cuda {

// Process-wide; the CUDA backend sets it once from KILN_PDL.
void SetProgrammaticLaunch(bool on);
bool ProgrammaticLaunch();

#ifdef __CUDACC__
// First thing in a kernel that Launch() starts: waits until the kernels
// ahead of it on the stream are done and their writes visible, then lets a
// programmatic kernel after it start launching (its blocks wait in turn at
// their own griddepcontrol.wait for this whole grid to finish, so the
// early start never shows them a partial result).
__device__ __forceinline__ void WaitForPriorKernels() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// kernel<<<grid, block, shared, stream>>>(args...), programmatic when on.
template <typename... Params, typename... Args>
cudaError_t Launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared,
                   cudaStream_t stream, Args &&...args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = ProgrammaticLaunch() ? attr : nullptr;
  config.numAttrs = ProgrammaticLaunch() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}
#endif

} // namespace kiln::kernels::cuda
