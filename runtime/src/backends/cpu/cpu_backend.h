// The CPU backend: host memory, weights read in place from the plan's
// mapping (matrix-product operands packed once), kernels from the CPU
// kernel table. It is the reference every other backend is tested against.
#pragma once

#include "core/backend.h"

#include <memory>

namespace kiln::cpu {

// The CPU's kernels: every op type of the shape table.
const KernelTable &CpuKernels();

std::unique_ptr<Backend> CreateCpuBackend();

} // namespace kiln::cpu
