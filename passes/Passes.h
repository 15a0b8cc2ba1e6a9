//===- Passes.h - kiln passes ------------------------------------*- C++ -*-===//
//
// Declarations of every kiln pass (generated from Passes.td) and of the named
// pipelines. Tools call registerKilnPasses() and registerKilnPipelines()
// once; code builds pipelines with create<PassName>() and the option structs
// (e.g. createKilnShapeInference(KilnShapeInferenceOptions{...})).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "compiler/dialect/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Adds the cleanup phase to `pm` (a module pass manager): shape inference
/// and shape-subgraph folding, CSE, canonicalization (dead op removal), and a
/// last shape inference. The same pipeline is registered as `kiln-cleanup`.
void buildCleanupPipeline(mlir::OpPassManager &pm);

/// Adds the plan phase to `pm` (a module pass manager): shape inference,
/// materialized outputs, host tensors (kiln-mark-host) and the memory plan,
/// per function. Registered as `kiln-plan`.
void buildPlanPipeline(mlir::OpPassManager &pm);

/// Registers the named pipelines (kiln-cleanup, kiln-plan) with the global
/// registry; calling it again does nothing. `kiln build`'s driver finds
/// them, and every pass, only through the registry.
void registerKilnPipelines();

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
