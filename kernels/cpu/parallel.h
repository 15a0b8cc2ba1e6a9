// A small persistent thread pool for the kernels that BLAS does not thread:
// few-row matrix products and paged attention. A worker that runs out of
// work spins for a short, bounded time (PoolSpinMicros) watching for the
// next job, then sleeps on a condition variable: back-to-back products (a
// decode step) skip the kernel's wake-up, and an idle engine or a busy
// machine loses at most that spin.
#pragma once

#include <cstdint>
#include <functional>

namespace kiln::kernels {

// Runs fn(begin, end) over [0, n) split into contiguous ranges, one per
// thread, at most GemmThreads() of them and none smaller than `grain`
// items; the caller runs the first range. Returns when all are done. A call
// from inside a range (nested) runs serially.
void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn);

// How long, in microseconds, a worker spins for the next job before it
// sleeps, and the caller for the workers' last ranges before it sleeps. The
// default is 100, or KILN_SPIN_US (0 to 1000000) when set (another value
// is warned about on stderr and ignored); 0 never spins.
// Set (negative: the default) takes effect from the next wait on.
void SetPoolSpinMicros(int64_t us);
int64_t PoolSpinMicros();

} // namespace kiln::kernels
