#include "kernels/cuda/launch.h"

#include <atomic>

namespace kiln::kernels::cuda {
namespace {
std::atomic<bool> programmatic{false};
} // namespace

void SetProgrammaticLaunch(bool on) { programmatic.store(on, std::memory_order_relaxed); }
bool ProgrammaticLaunch() { return programmatic.load(std::memory_order_relaxed); }

} // namespace kiln::kernels::cuda
