//===- Cleanup.cpp - the kiln-cleanup pipeline and pass registration ------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

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

void registerKilnPipelines() {
  PassPipelineRegistration<>("kiln-cleanup", "Shape inference, shape-subgraph folding, CSE and DCE",
                             buildCleanupPipeline);
}

} // namespace kiln
