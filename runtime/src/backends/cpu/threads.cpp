// The CPU backend's process-wide settings (kiln/cpu.h).
#include "kiln/cpu.h"

#include "kernels/cpu/gemm.h"

#include <atomic>

namespace kiln {
namespace {

std::atomic<bool> g_weight_packing{true};

} // namespace

void SetCpuThreads(int threads) { kernels::SetGemmThreads(threads); }

void SetCpuWeightPacking(bool enabled) { g_weight_packing.store(enabled); }

bool CpuWeightPacking() { return g_weight_packing.load(); }

} // namespace kiln
