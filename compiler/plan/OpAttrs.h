//===- OpAttrs.h - MLIR op attributes as plan attributes ---------*- C++ -*-===//
//
// The plan's Attr is a small tagged union (int, float, string, ints,
// floats). The conversion is generic over MLIR attribute kinds, so a new op
// needs no change here as long as its attributes are scalars, strings or
// small arrays.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PLAN_OPATTRS_H
#define KILN_COMPILER_PLAN_OPATTRS_H

#include "compiler/plan/PlanModel.h"

#include "mlir/IR/Operation.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace kiln::plan {

/// Dense attributes larger than this are refused: an attribute that big is a
/// weight in disguise and belongs in a section.
inline constexpr int64_t kMaxDenseAttrElements = 4096;

/// The op's attributes that reach the plan, sorted by name: every inherent
/// attribute, without operand/result segment sizes and without discardable
/// `kiln.*` annotations (slots, host, dims), which the plan carries
/// elsewhere. An attribute of a kind the plan cannot hold is an error naming
/// it.
llvm::Expected<std::vector<AttrDesc>> convertOpAttrs(mlir::Operation *op);

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_OPATTRS_H
