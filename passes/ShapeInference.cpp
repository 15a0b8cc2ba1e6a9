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
    nameResultDims(func, ctx);
    if (annotateDims)
      annotate(func, ctx);
  }

  /// Fills the unnamed ("") entries of each result's kiln.dims with the
  /// symbolic dim inference found, so the plan names as many dims as it can.
  void nameResultDims(func::FuncOp func, const ShapeInferenceContext &ctx) {
    Operation *terminator = func.getBody().back().getTerminator();
    for (auto [i, value] : llvm::enumerate(terminator->getOperands())) {
      auto dims = func.getResultAttrOfType<ArrayAttr>(i, "kiln.dims");
      SymShape shape = ctx.getShape(value);
      if (!dims || !shape.ranked || int64_t(dims.size()) != shape.getRank())
        continue;
      SmallVector<Attribute> names(dims.begin(), dims.end());
      for (auto [name, dim] : llvm::zip(names, shape.dims))
        if (auto s = dyn_cast<StringAttr>(name); s && s.getValue().empty() && dim.isSymbolic())
          name = StringAttr::get(func.getContext(), dim.str());
      func.setResultAttr(i, "kiln.dims", ArrayAttr::get(func.getContext(), names));
    }
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
