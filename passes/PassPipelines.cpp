//===- PassPipelines.cpp - kiln's named pass pipelines, registered --------===//
//
// The build driver (compiler/driver/) never includes this folder: it adds
// these pipelines and kiln's passes to its pass managers by their registered
// names, so passes and driver only meet in the tools that register both.

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

using namespace mlir;

namespace kiln {

void buildCleanupPipeline(OpPassManager &pm) {
  // Fold first so CSE sees constants, then let canonicalization drop what
  // became dead, and end with types that reflect the final graph.
  pm.addNestedPass<func::FuncOp>(createKilnFoldShapes());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createKilnShapeInference());
}

void buildPlanPipeline(OpPassManager &pm) {
  // Types must be final before slots are sized; the plan writer checks that
  // nothing changes after this.
  pm.addNestedPass<func::FuncOp>(createKilnShapeInference());
  pm.addNestedPass<func::FuncOp>(createKilnMaterializeOutputs());
  pm.addNestedPass<func::FuncOp>(createKilnMarkHost());
  pm.addNestedPass<func::FuncOp>(createKilnMemoryPlan());
}

void registerKilnPipelines() {
  // MLIR refuses a pipeline name registered twice; in-process callers (tests,
  // fuzzers) may register more than once.
  static std::once_flag once;
  std::call_once(once, [] {
    PassPipelineRegistration<>("kiln-cleanup",
                               "Shape inference, shape-subgraph folding, CSE and DCE",
                               buildCleanupPipeline);
    PassPipelineRegistration<>("kiln-plan",
                               "Final types, materialized outputs, host tensors and the "
                               "memory plan: what the plan writer needs",
                               buildPlanPipeline);
  });
}

} // namespace kiln
