//===- GraphCollector.h - a kiln function as plan tensors and ops -*- C++ -*-===//

#ifndef KILN_COMPILER_PLAN_GRAPHCOLLECTOR_H
#define KILN_COMPILER_PLAN_GRAPHCOLLECTOR_H

#include "compiler/plan/PlanModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

namespace kiln::plan {

/// Collects `func` (after kiln-mark-host and kiln-memory-plan ran on it) into
/// plan form:
///   - tensors: graph inputs (named by their `kiln.name`), weights (one per
///     kiln.constant, bytes laid out in `weights`), and activations (named
///     by node, or by the graph output name they are returned as), with
///     shapes whose dynamic dims carry the symbols shape inference derives;
///   - ops in order, with -1 for omitted optional operands;
///   - graph inputs/outputs and the memory plan.
/// Errors name the op (its ONNX node) and what the plan cannot represent;
/// a missing or inconsistent memory plan is an InternalError.
llvm::Expected<GraphDesc> collectGraph(mlir::func::FuncOp func);

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_GRAPHCOLLECTOR_H
