//===- WeightBytes.h - constant values as plan weight bytes -----*- C++ -*-===//
//
// The plan stores a weight as raw little-endian, row-major bytes, one byte
// per bool (schemas/plan.fbs). kiln.constant holds either a DenseElementsAttr
// (small constants; MLIR packs i1 as bits and stores splats once) or a
// DenseResourceElementsAttr whose blob already has the plan's layout (the
// importer maps it from the model's data). This unit hides the difference.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PLAN_WEIGHTBYTES_H
#define KILN_COMPILER_PLAN_WEIGHTBYTES_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace kiln::plan {

/// Byte size of `value` in the plan's layout, or an error when its type is
/// not static or not a plan dtype.
llvm::Expected<uint64_t> weightByteSize(mlir::ElementsAttr value);

/// Receives a weight's bytes in order, piece by piece; false stops the
/// stream with an error (a failed write).
using WeightSink = llvm::function_ref<bool(const void *data, uint64_t size)>;

/// Passes `value` in the plan's layout to `sink`, weightByteSize() bytes in
/// all, without a copy of the whole value: a resource blob goes out as it
/// is (its mapped file pages are released afterwards, see compiler/support/SourcePages.h),
/// splats and bools through a small buffer. Fails when a resource blob is
/// missing or has the wrong size.
llvm::Error streamWeightBytes(mlir::ElementsAttr value, WeightSink sink);

/// Passes one tensor-parallel rank's slice of `full` to `sink`: along
/// `axis`, `groups` blocks of `fullDim` elements, [offset, offset + count)
/// of each (the plan's ShardSpec). Reads the rows it needs straight from the
/// mapped or dense value, a megabyte at a time, so no copy of the slice
/// exists; a resource's pages are released afterwards.
llvm::Error streamWeightSlice(mlir::ElementsAttr full, int64_t axis, int64_t offset,
                              int64_t count, int64_t fullDim, int64_t groups, WeightSink sink);

/// Writes `value` in the plan's layout to `out`, which has weightByteSize()
/// bytes. Fails when a resource blob is missing or has the wrong size.
llvm::Error writeWeightBytes(mlir::ElementsAttr value, uint8_t *out);

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_WEIGHTBYTES_H
