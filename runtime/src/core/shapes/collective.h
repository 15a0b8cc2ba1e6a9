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
// Checks `spec` against the communicator's ranks (null: one rank) and the
// operand's extent on this rank.
Status CheckAllGatherRank(const AllGatherSpec &spec, const TensorView &x, int rank, int size);

} // namespace kiln
