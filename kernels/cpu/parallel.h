// A small persistent thread pool for the kernels that BLAS does not thread:
// few-row matrix products and paged attention. Idle workers sleep on a
// condition variable rather than spin, so a busy machine loses nothing.
#pragma once

#include <cstdint>
#include <functional>

namespace kiln::kernels {

// Runs fn(begin, end) over [0, n) split into contiguous ranges, one per
// thread, at most GemmThreads() of them and none smaller than `grain`
// items; the caller runs the first range. Returns when all are done. A call
// from inside a range (nested) runs serially.
void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn);

} // namespace kiln::kernels
