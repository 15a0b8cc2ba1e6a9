//===- ShapeInference.cpp - kiln-shape-inference --------------------------===//
//
// Refines every kiln result type from its operands (see Passes.td). The work
// is the dialect's: inferFunctionShapes() drives each op's shape function.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"
#include "passes/Passes.h"

using namespace mlir;

namespace kiln {

#define GEN_PASS_DEF_KILNSHAPEINFERENCE
#include "passes/Passes.h.inc"

namespace {

struct ShapeInferencePass : impl::KilnShapeInferenceBase<ShapeInferencePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    ShapeInferenceContext ctx;
    if (failed(inferFunctionShapes(func, ctx)))
      return signalPassFailure();
    if (annotateDims)
      annotate(func, ctx);
  }

  /// Attaches kiln.dims (one array per result) to ops with a symbolic dim.
  void annotate(func::FuncOp func, const ShapeInferenceContext &ctx) {
    func.walk([&](ShapeInferenceOpInterface op) {
      bool symbolic = false;
      SmallVector<Attribute> perResult;
      for (Value result : op->getResults()) {
        SymShape shape = ctx.getShape(result);
        symbolic |= llvm::any_of(shape.dims, [](const SymDim &d) { return d.isSymbolic(); });
        perResult.push_back(getDimsAttr(func.getContext(), shape));
      }
      if (symbolic)
        op->setAttr("kiln.dims", ArrayAttr::get(func.getContext(), perResult));
      else
        op->removeAttr("kiln.dims");
    });
  }
};

} // namespace
} // namespace kiln
