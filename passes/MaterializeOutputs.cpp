//===- MaterializeOutputs.cpp - one tensor per graph output --------------===//
//
// kiln-materialize-outputs: returns a kiln.identity copy for each graph
// output that is a function argument, a constant, a host tensor, or a value
// already returned earlier, so every output can carry its ONNX name and live
// in the arena. The contract is in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"
#include "compiler/plan/PlanAttrs.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace kiln {

#define GEN_PASS_DEF_KILNMATERIALIZEOUTPUTS
#include "passes/Passes.h.inc"

namespace {

/// True when `v` cannot stand as a graph output by itself.
bool needsCopy(mlir::Value v, const llvm::DenseSet<mlir::Value> &returned) {
  if (returned.contains(v))
    return true;
  mlir::Operation *def = v.getDefiningOp();
  return !def || plan::isWeightOp(def) || plan::isHostOp(def);
}

struct MaterializeOutputs : impl::KilnMaterializeOutputsBase<MaterializeOutputs> {
  void runOnOperation() override {
    mlir::func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    mlir::Operation *ret = func.getBody().back().getTerminator();
    mlir::OpBuilder b(ret);
    llvm::DenseSet<mlir::Value> returned;
    for (mlir::OpOperand &operand : ret->getOpOperands()) {
      mlir::Value v = operand.get();
      if (needsCopy(v, returned)) {
        auto copy = b.create<IdentityOp>(v.getLoc(), v.getType(), v);
        operand.set(copy.getResult());
      }
      returned.insert(operand.get());
    }
  }
};

} // namespace
} // namespace kiln
