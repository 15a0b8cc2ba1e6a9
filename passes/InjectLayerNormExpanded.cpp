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
    auto addEps = userOf<AddOp>(var.getC(), [](AddOp) { return true; });
    std::optional<double> eps =
        addEps ? scalarConstant(otherOperand(addEps, var.getC())) : std::nullopt;
    if (!eps)
      return fail("the variance is not followed by '+ epsilon' (a scalar constant)");
    auto sqrt = userOf<SqrtOp>(addEps.getC(), [](SqrtOp) { return true; });
    if (!sqrt)
      return fail("variance + epsilon is not followed by Sqrt");
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
    auto scale = dyn_cast_or_null<MulOp>(soleUser(n));
    Value w = scale ? unflatten0(otherOperand(scale, n)) : nullptr;
    if (!w)
      return fail("the normalized value is not multiplied by Flatten(scale, 0)");
    Value last = scale.getC(), b;
    if (auto bias = dyn_cast_or_null<AddOp>(soleUser(last)))
      if ((b = unflatten0(otherOperand(bias, last))))
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
    for (Value p : {w, b}) {
      auto pType = p ? dyn_cast<RankedTensorType>(p.getType()) : nullptr;
      if (p && (!pType || pType.getShape() != suffix))
        return fail("scale or bias does not have the normalized dims' shape");
    }
    rewriter.setInsertionPoint(replaced.getDefiningOp());
    auto ln = rewriter.create<LayerNormalizationOp>(
        mean.getLoc(), xType, x, w, b, rewriter.getI64IntegerAttr(axis),
        rewriter.getF32FloatAttr(static_cast<float>(*eps)), rewriter.getI64IntegerAttr(1));
    rewriter.replaceOp(replaced.getDefiningOp(), ln.getY());
    return success();
  }
};

} // namespace

void populateExpandedLayerNormPatterns(RewritePatternSet &patterns) {
  patterns.add<ExpandedLayerNorm>(patterns.getContext(), /*benefit=*/2);
}

} // namespace kiln::inject
