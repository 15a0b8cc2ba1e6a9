//===- PartitionShard.h - one rank's slice of a weight -----------*- C++ -*-===//
//
// kiln-partition's arithmetic and weight slicing, apart from its matching:
// how N ranks share H heads (or F columns), and a constant that holds one
// rank's slice of another. A slice carries `kiln.shard` (the plan's
// ShardSpec: full_name, axis, offset, full_dim, groups, plus `source`, the
// unsplit value), so the plan writer streams the rank's bytes straight from
// the unsplit weight and kiln reshard can put it back together.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PARTITIONSHARD_H
#define KILN_PASSES_PARTITIONSHARD_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <vector>

namespace kiln::partition {

/// The discardable attribute on a sliced constant (see the file comment).
inline constexpr const char *kShardAttr = "kiln.shard";

/// [first, first + count) of `total` items for rank `rank` of `ranks`:
/// DeepSpeed's uneven split, the first total % ranks ranks get one more
/// (a rank gets none when total < ranks).
struct Range {
  int64_t first = 0, count = 0;
};
Range rankRange(int64_t total, int64_t ranks, int64_t rank);
/// Every rank's range, rank 0 first.
std::vector<Range> rankRanges(int64_t total, int64_t ranks);

/// Rank r's slice of the constant `weight`: along `axis`, `groups` blocks
/// of `fullDim` elements each (the axis' extent is groups * fullDim), and
/// elements [offset, offset + count) of every block. A dense value is
/// sliced now; a resource (a mapped model weight, possibly gigabytes) is
/// not copied: the slice's value is a resource without data, and
/// `kiln.shard.source` is where the writer reads its bytes. Returns null
/// when `weight` is not a constant of static shape.
mlir::Value sliceWeight(mlir::OpBuilder &b, mlir::Value weight, int64_t axis, int64_t offset,
                        int64_t count, int64_t fullDim, int64_t groups, int64_t rank);

/// The name a constant goes by in the plan (its `name`, else its node).
std::string weightName(mlir::Value weight);

} // namespace kiln::partition

#endif // KILN_PASSES_PARTITIONSHARD_H
