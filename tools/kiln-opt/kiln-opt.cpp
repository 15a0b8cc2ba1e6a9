//===- kiln-opt.cpp - run kiln passes on MLIR files -----------------------===//
//
// mlir-opt for kiln: parses .mlir, runs any registered kiln pass or pipeline
// (kiln-cleanup, ...) and prints the result. Registers only what kiln IR
// uses: the kiln, func and builtin dialects, kiln's passes, and the generic
// cse/canonicalize passes the cleanup pipeline needs.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnDialect.h"
#include "passes/PartitionPass.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<kiln::KilnDialect, mlir::func::FuncDialect>();
  kiln::registerKilnPasses();
  kiln::registerPartitionPass();
  kiln::registerKilnPipelines();
  mlir::registerCSEPass();
  mlir::registerCanonicalizerPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "kiln optimizer driver\n", registry));
}
