// The CPU backend's process-wide settings (kiln/cpu.h).
#include "kiln/cpu.h"

#include "kernels/cpu/products_gemm.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace kiln {
namespace {

// On unless the environment says KILN_CPU_PACK=0 (for comparing the packed
// kernels with the plain ones on a real plan).
bool PackingDefault() {
  const char *v = std::getenv("KILN_CPU_PACK");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

std::atomic<bool> g_weight_packing{PackingDefault()};

// On unless the environment says KILN_CPU_NARROW=0.
bool NarrowingDefault() {
  const char *v = std::getenv("KILN_CPU_NARROW");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

std::atomic<bool> g_exact_narrowing{NarrowingDefault()};

} // namespace

void SetCpuThreads(int threads) { kernels::SetGemmThreads(threads); }

void SetCpuWeightPacking(bool enabled) { g_weight_packing.store(enabled); }

bool CpuWeightPacking() { return g_weight_packing.load(); }

void SetCpuExactNarrowing(bool enabled) { g_exact_narrowing.store(enabled); }

bool CpuExactNarrowing() { return g_exact_narrowing.load(); }

} // namespace kiln
