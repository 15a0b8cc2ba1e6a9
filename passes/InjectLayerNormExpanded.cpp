//===- InjectLayerNormExpanded.cpp - ONNX's function-expanded LayerNorm ---===//
//
// ONNX defines LayerNormalization as a function; the `*_expanded` node tests
// (and exporters that inline functions) spell it as
//
//   x2 = Flatten(X, axis)                     [M, N]
//   mean = ReduceMean(x2, [1]); var = ReduceMean(x2 * x2) - mean * mean
//   y2 = (x2 - mean) / Sqrt(var + eps) * Flatten(W, 0) + Flatten(B, 0)
//   Y = Reshape(y2, Shape(X))
//
// which becomes LayerNormalization(X, W, B, axis). Rooted at the first
// ReduceMean; the mean and the variance may have other users (the Mean and
// InvStdDev outputs), which keep them alive.
//
//===----------------------------------------------------------------------===//

#include "passes/InjectPatterns.h"
#include "passes/InjectUtils.h"

using namespace mlir;

namespace kiln::inject {
namespace {

template <typename OpT> OpT userOf(Value v, llvm::function_ref<bool(OpT)> pred) {
  for (Operation *u : v.getUsers())
    if (auto op = dyn_cast<OpT>(u); op && pred(op))
      return op;
  return nullptr;
}

/// The Flatten(v, 0) of a value, or null.
Value unflatten0(Value v) {
  auto flat = v.getDefiningOp<FlattenOp>();
  return flat && flat.getAxis() == 0 ? flat.getInput() : nullptr;
}

struct ExpandedLayerNorm : OpRewritePattern<ReduceMeanOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceMeanOp mean, PatternRewriter &rewriter) const override {
    Value x2 = mean.getData(), m = mean.getReduced();
    if (rankOf(x2) != 2 || mean.getKeepdims() != 1 || !mean.getAxes() ||
        !isLastAxis(mean.getAxes(), 2))
      return failure();
    // var = mean(x2 * x2) - mean * mean
    auto sqm = userOf<MulOp>(m, [&](MulOp op) { return op.getA() == m && op.getB() == m; });
    if (!sqm)
      return failure();
    auto var = userOf<SubOp>(sqm.getC(), [&](SubOp op) {
      auto msq = op.getA().getDefiningOp<ReduceMeanOp>();
      auto sq = msq ? msq.getData().getDefiningOp<MulOp>() : nullptr;
      return op.getB() == sqm.getC() && sq && sq.getA() == x2 && sq.getB() == x2 && msq.getAxes() &&
             isLastAxis(msq.getAxes(), 2) && msq.getKeepdims() == 1;
    });
    if (!var)
      return failure();
    auto fail = [&](const char *why) {
      return rewriter.notifyMatchFailure(mean, std::string("expanded LayerNorm: ") + why);
    };
    // Cleanup folds `+ 0`, `* 1` and `+ 0` away: an epsilon of 0 leaves the
    // variance going straight into Sqrt, a scale of ones leaves no Mul (a
    // unit scale), a zero bias leaves no Add. A scale or bias that was a
    // constant is a folded Flatten: [1, N] or [N] instead of Flatten(W, 0).
    double eps = 0.0;
    Value stdArg = var.getC();
    if (auto addEps = userOf<AddOp>(var.getC(), [&](AddOp op) {
          return scalarConstant(otherOperand(op, var.getC())).has_value();
        })) {
      eps = *scalarConstant(otherOperand(addEps, var.getC()));
      stdArg = addEps.getC();
    }
    auto sqrt = userOf<SqrtOp>(stdArg, [](SqrtOp) { return true; });
    if (!sqrt)
      return fail("the variance (+ a scalar constant epsilon) is not followed by Sqrt");
    auto dev = userOf<SubOp>(m, [&](SubOp op) { return op.getA() == x2 && op.getB() == m; });
    auto norm = dev ? userOf<DivOp>(dev.getC(), [&](DivOp op) { return op.getB() == sqrt.getY(); })
                    : nullptr;
    if (!norm)
      return fail("(x - mean) is not divided by the standard deviation");
    Value n = norm.getC();
    while (Operation *u = soleUser(n)) {
      auto cast = dyn_cast<CastOp>(u);
      if (!cast || cast.getOutput().getType() != n.getType())
        break;
      n = cast.getOutput();
    }
    int64_t cols = dimOf(x2, 1);
    // Flatten(W, 0), or the [1, N] / [N] constant it folded to.
    auto flatParam = [&](Value v) -> Value {
      if (!v)
        return nullptr;
      if (Value p = unflatten0(v))
        return p;
      return cols > 0 && isPerChannelConstant(v, cols, 2) && dimOf(v, -1) == cols ? v : nullptr;
    };
    Value last = n, w, b;
    if (auto scale = dyn_cast_or_null<MulOp>(soleUser(n))) {
      w = flatParam(otherOperand(scale, n));
      if (!w)
        return fail("the normalized value is not multiplied by Flatten(scale, 0) (or the "
                    "[1, N] constant it folds to)");
      last = scale.getC();
    }
    if (auto bias = dyn_cast_or_null<AddOp>(soleUser(last)))
      if ((b = flatParam(otherOperand(bias, last))))
        last = bias.getC();
    auto reshape = dyn_cast_or_null<ReshapeOp>(soleUser(last));
    auto flat = skipCasts(x2).getDefiningOp<FlattenOp>();
    // A 2-D input normalized over its last dim needs no Reshape back (an
    // identity that cleanup removes), and may have lost its Flatten too.
    Value x = flat ? flat.getInput() : skipCasts(x2);
    Value replaced =
        reshape ? reshape.getReshaped() : (x.getType() == last.getType() ? last : Value());
    if (!replaced)
      return fail("the 2-D result is not reshaped back to the input's shape");
    int64_t rank = rankOf(x), axis = flat ? static_cast<int64_t>(flat.getAxis()) : 1;
    if (axis < 0) // I64Attr getters are unsigned; the axis may be negative.
      axis += rank;
    auto xType = dyn_cast<RankedTensorType>(x.getType());
    if (!xType || !xType.hasStaticShape() || replaced.getType() != xType)
      return fail("the input's shape is not static, or the result is not reshaped to it");
    auto suffix = xType.getShape().drop_front(axis);
    auto suffixType = RankedTensorType::get(suffix, xType.getElementType());
    for (Value p : {w, b}) {
      if (!p)
        continue;
      // A constant is reshaped to the normalized dims below (Flatten(W, 0)
      // reads W in row-major order, as a reshape does).
      auto pType = dyn_cast<RankedTensorType>(p.getType());
      bool shapeOk =
          pType && (isConstant(p) ? isa<DenseElementsAttr, DenseResourceElementsAttr>(
                                        p.getDefiningOp<ConstantOp>().getValue()) &&
                                        pType.hasStaticShape() &&
                                        pType.getNumElements() == suffixType.getNumElements()
                                  : pType.getShape() == suffix);
      if (!shapeOk)
        return fail("scale or bias does not have the normalized dims' shape");
      if (pType.getElementType() != xType.getElementType())
        return fail("scale or bias is not of the input's element type");
    }
    rewriter.setInsertionPoint(replaced.getDefiningOp());
    // Folded constants take the normalized dims' shape; a missing scale is ones.
    auto toSuffix = [&](Value p) -> Value {
      if (!p || !isConstant(p) || p.getType() == suffixType)
        return p;
      return reshapedConstant(rewriter, mean.getLoc(), p, suffixType);
    };
    w = w ? toSuffix(w)
          : splatConstant(rewriter, mean.getLoc(), suffixType, 1.0, unitScaleName(mean.getLoc()));
    b = toSuffix(b);
    auto ln = rewriter.create<LayerNormalizationOp>(
        mean.getLoc(), xType, x, w, b, rewriter.getI64IntegerAttr(axis),
        rewriter.getF32FloatAttr(static_cast<float>(eps)), rewriter.getI64IntegerAttr(1));
    rewriter.replaceOp(replaced.getDefiningOp(), ln.getY());
    return success();
  }
};

} // namespace

void populateExpandedLayerNormPatterns(RewritePatternSet &patterns) {
  patterns.add<ExpandedLayerNorm>(patterns.getContext(), /*benefit=*/2);
}

} // namespace kiln::inject
