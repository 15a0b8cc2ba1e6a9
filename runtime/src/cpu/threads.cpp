#include "kiln/cpu.h"

#include "cpu/gemm.h"

namespace kiln {

void SetCpuThreads(int threads) { kernels::SetGemmThreads(threads); }

}  // namespace kiln
