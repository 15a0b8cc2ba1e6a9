// The tensor-parallel collectives of a rank program (all_reduce,
// all_gather; docs/tp-runtime.md): their attributes read and checked once,
// for the shape rules and every backend's kernels.
#pragma once

#include "core/kernel.h"

#include <vector>

namespace kiln {

// all_gather's concatenation: `axis` (non-negative) and each rank's extent
// along it, `sizes` (one per rank, each >= 0).
struct AllGatherSpec {
  int64_t axis = 0;
  std::vector<int64_t> sizes;
  int64_t outer = 1, inner = 1; // elements before and after `axis`
};
StatusOr<AllGatherSpec> ReadAllGather(const OpAttrs &attrs, const TensorView &x);
// An all_gather on this rank: `spec` checked against the run's ranks
// (`rank` of `size`; 0 of 1 without a communicator) and the operand's
// extent, each rank's element count as the communicator takes it, and the
// result's extent along the axis.
struct AllGatherRun {
  AllGatherSpec spec;
  std::vector<int64_t> counts; // outer * sizes[r] * inner
  int64_t total = 0;           // sum of sizes
};
StatusOr<AllGatherRun> PlanAllGather(const OpAttrs &attrs, const TensorView &x, int rank, int size);

} // namespace kiln
