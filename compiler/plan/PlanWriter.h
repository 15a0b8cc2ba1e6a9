//===- PlanWriter.h - write a kiln module as a .plan file --------*- C++ -*-===//
//
// The last step of `kiln build`: the module (after the plan-phase passes)
// plus what the driver gathered around it (model files, build config) become
// one .plan file, laid out as schemas/plan.fbs describes. The file appears
// atomically: it is written to a temporary name and renamed, so a failed
// build never leaves a partial plan behind.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PLAN_PLANWRITER_H
#define KILN_COMPILER_PLAN_PLANWRITER_H

#include "compiler/plan/PlanModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace kiln::plan {

/// What was written, for the build's summary line.
struct PlanSummary {
  uint64_t fileBytes = 0;
  size_t numTensors = 0;
  size_t numOps = 0;
  size_t numWeights = 0;
  uint64_t weightBytes = 0;
  MemoryPlanDesc memory;
  DecoderDesc decoder;
  RaggedDesc ragged;
};

/// The function a plan is built from: the module's only function with a
/// body, or the one named "main" when there are several.
llvm::Expected<mlir::func::FuncOp> findGraphFunction(mlir::ModuleOp module);

/// Collects the graph, detects the decoder roles and writes `path`.
llvm::Expected<PlanSummary> writePlan(mlir::ModuleOp module, const PlanExtras &extras,
                                      const std::string &path);

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_PLANWRITER_H
