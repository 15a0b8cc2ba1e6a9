//===- GraphCollector.h - a kiln function as plan tensors and ops -*- C++ -*-===//

#ifndef KILN_COMPILER_PLAN_GRAPHCOLLECTOR_H
#define KILN_COMPILER_PLAN_GRAPHCOLLECTOR_H

#include "compiler/plan/PlanModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "llvm/Support/Error.h"

namespace kiln::plan {

/// A weight's value, whose bytes the plan writer streams to the tensor's
/// section offset; the value aliases the model's data, so nothing is copied
/// before the write.
struct WeightSource {
  int32_t tensor = -1;
  mlir::ElementsAttr value;
  /// Set for a tensor-parallel shard (kiln-partition's kiln.shard): the
  /// unsplit value its bytes are sliced from (the tensor's ShardDesc says
  /// which); `value` may then be a resource without data.
  mlir::ElementsAttr shardSource;
};

struct CollectedGraph {
  GraphDesc graph;
  std::vector<WeightSource> weights; // in offset order
};

/// Collects `func` (after kiln-mark-host and kiln-memory-plan ran on it) into
/// plan form:
///   - tensors: graph inputs (named by their `kiln.name`), weights (one per
///     kiln.constant, placed in section 0 with their values in `weights`), and activations (named
///     by node, or by the graph output name they are returned as), with
///     shapes whose dynamic dims carry the symbols shape inference derives;
///   - ops in order, with -1 for omitted optional operands;
///   - graph inputs/outputs and the memory plan.
/// Errors name the op (its ONNX node) and what the plan cannot represent;
/// a missing or inconsistent memory plan is an InternalError.
llvm::Expected<CollectedGraph> collectGraph(mlir::func::FuncOp func);

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_GRAPHCOLLECTOR_H
