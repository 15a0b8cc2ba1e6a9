// Settings of the CPU backend that a host application may change.
#pragma once

namespace kiln {

// Caps the threads the CPU backend's matrix products use; 0 means every core.
// Small products always run on one thread (see kernels/cpu/gemm.h).
void SetCpuThreads(int threads);

}  // namespace kiln
