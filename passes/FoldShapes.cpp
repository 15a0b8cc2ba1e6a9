//===- FoldShapes.cpp - kiln-fold-shapes ----------------------------------===//
//
// Alternates shape inference with folding until nothing changes (see
// Passes.td). Beyond the op folders it uses what only the symbolic shape
// analysis knows: a small integer tensor whose every element is static
// becomes a constant (Gather(Shape(x), 2) when dim 2 of x is static, even if
// other dims are not), and a Reshape or Expand whose result has exactly its
// input's known dims (symbols included) is dropped.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace kiln {

#define GEN_PASS_DEF_KILNFOLDSHAPES
#include "passes/Passes.h.inc"

namespace {

/// Replaces small integer results whose values are all statically known by
/// constants. Returns true when anything changed.
bool materializeKnownValues(func::FuncOp func, const ShapeInferenceContext &ctx) {
  bool changed = false;
  OpBuilder builder(func.getContext());
  func.walk([&](ShapeInferenceOpInterface op) {
    if (isa<ConstantOp>(op))
      return;
    for (Value result : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || !type.hasStaticShape() || type.getRank() > 1 ||
          !type.getElementType().isSignlessInteger() || result.use_empty())
        continue;
      std::optional<SmallVector<int64_t>> values = ctx.getStaticValues(result);
      if (!values || int64_t(values->size()) != type.getNumElements())
        continue;
      unsigned width = type.getElementType().getIntOrFloatBitWidth();
      SmallVector<APInt> elements;
      for (int64_t v : *values)
        elements.push_back(APInt(width, v, /*isSigned=*/width > 1));
      builder.setInsertionPoint(op);
      auto constant =
          builder.create<ConstantOp>(op->getLoc(), type, DenseElementsAttr::get(type, elements),
                                     /*name=*/StringAttr());
      result.replaceAllUsesWith(constant);
      changed = true;
    }
  });
  return changed;
}

/// Drops Reshape/Expand ops whose result provably equals their input.
bool removeSymbolicIdentities(func::FuncOp func, const ShapeInferenceContext &ctx) {
  bool changed = false;
  func.walk([&](Operation *op) {
    if (!isa<ReshapeOp, ExpandOp>(op))
      return;
    Value input = op->getOperand(0), result = op->getResult(0);
    SymShape in = ctx.getShape(input), out = ctx.getShape(result);
    if (input.getType() != result.getType() || !out.isFullyKnown() || !(in == out) ||
        result.use_empty())
      return;
    result.replaceAllUsesWith(input);
    changed = true;
  });
  return changed;
}

struct FoldShapesPass : impl::KilnFoldShapesBase<FoldShapesPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    RewritePatternSet set(context);
    for (RegisteredOperationName name : context->getRegisteredOperations())
      if (name.getDialectNamespace() == KilnDialect::getDialectNamespace())
        name.getCanonicalizationPatterns(set, context);
    patterns = FrozenRewritePatternSet(std::move(set));
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    for (unsigned round = 0; round < maxIterations; ++round) {
      bool changed = false;
      ShapeInferenceContext ctx;
      if (failed(inferFunctionShapes(func, ctx, &changed)))
        return signalPassFailure();
      changed |= materializeKnownValues(func, ctx);
      changed |= removeSymbolicIdentities(func, ctx);
      bool rewritten = false;
      // Not converging within the driver's own limit is fine: the next
      // round continues.
      (void)applyPatternsAndFoldGreedily(func, patterns, GreedyRewriteConfig(), &rewritten);
      if (!changed && !rewritten)
        return;
    }
  }

  FrozenRewritePatternSet patterns;
};

} // namespace
} // namespace kiln
