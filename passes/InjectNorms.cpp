//===- InjectNorms.cpp - RMSNorm, LayerNorm and residual + norm -----------===//
//
// Norms are rooted at their first ReduceMean:
//
//   RMSNorm:   x * 1/sqrt(mean(x^2) + eps) * w    (Pow or Mul for the square;
//              Div(1, .), Reciprocal or Div(x, .) for the inverse; Casts
//              anywhere on x)
//   LayerNorm: d = x - mean(x); d / sqrt(mean(d^2) + eps) * w + b
//
// and a norm whose input is a residual Add becomes add_rms_norm /
// add_layer_norm, which also returns the sum for the next residual.
//
//===----------------------------------------------------------------------===//

#include "passes/InjectPatterns.h"
#include "passes/InjectUtils.h"

#include <cmath>

using namespace mlir;

namespace kiln::inject {
namespace {

/// If `v` is x*x or Pow(x, 2), returns x.
Value squaredOperand(Value v) {
  if (auto pow = v.getDefiningOp<PowOp>()) {
    if (std::optional<double> e = scalarConstant(pow.getB()); e && *e == 2.0)
      return pow.getA();
    return nullptr;
  }
  if (auto mul = v.getDefiningOp<MulOp>())
    if (mul.getA() == mul.getB())
      return mul.getA();
  return nullptr;
}

/// From `mean` (a ReduceMean over the last dim with keepdims), follows
/// `+ eps`, `sqrt` and the inverse to the tensor `base * inv` or
/// `base / sqrt`; returns that product and eps. `base` is the value being
/// normalized (x for RMSNorm, x - mean for LayerNorm). An epsilon of 0 is
/// no Add at all once cleanup has folded `+ 0`: the mean goes straight into
/// the Sqrt.
FailureOr<std::pair<Value, double>> matchInverseStd(ReduceMeanOp mean, Value base,
                                                    std::string &why) {
  auto fail = [&](const char *reason) -> FailureOr<std::pair<Value, double>> {
    why = reason;
    return failure();
  };
  if (mean.getKeepdims() != 1)
    return fail("the mean does not keep its reduced dim");
  if (!mean.getAxes() || !isLastAxis(mean.getAxes(), rankOf(mean.getData())))
    return fail("the mean is not over the last dim only");
  Operation *user = soleUser(mean.getReduced());
  double eps = 0.0;
  SqrtOp sqrt = dyn_cast_or_null<SqrtOp>(user);
  if (sqrt) {
    if (isa_and_nonnull<AddOp>(soleUser(sqrt.getY())))
      return fail("epsilon is added after the square root (sqrt(mean) + eps), not inside it");
  } else if (auto addEps = dyn_cast_or_null<AddOp>(user)) {
    std::optional<double> c = scalarConstant(otherOperand(addEps, mean.getReduced()));
    if (!c)
      return fail("epsilon is not a scalar constant");
    eps = *c;
    sqrt = dyn_cast_or_null<SqrtOp>(soleUser(addEps.getC()));
    if (!sqrt)
      return fail("mean + epsilon is not followed by Sqrt");
  } else {
    return fail("the mean is followed by neither '+ epsilon' nor Sqrt");
  }
  Operation *inv = soleUser(sqrt.getY());
  Value invValue;
  if (auto div = dyn_cast_or_null<DivOp>(inv)) {
    if (div.getB() != sqrt.getY())
      return fail("the square root is a numerator");
    if (skipCasts(div.getA()) == base)
      return std::pair<Value, double>(div.getC(), eps);
    std::optional<double> one = scalarConstant(div.getA());
    if (!one || *one != 1.0)
      return fail("the square root divides neither 1 nor the normalized input");
    invValue = div.getC();
  } else if (auto rec = dyn_cast_or_null<ReciprocalOp>(inv)) {
    invValue = rec.getY();
  } else {
    return fail("the square root is not inverted (Div or Reciprocal)");
  }
  auto mul = dyn_cast_or_null<MulOp>(soleUser(invValue));
  if (!mul)
    return fail("the inverse square root does not multiply the input");
  Value other = otherOperand(mul, invValue);
  if (!other || skipCasts(other) != base)
    return fail("the inverse square root multiplies something other than the normalized input");
  return std::pair<Value, double>(mul.getC(), eps);
}

/// How a norm ends, found before anything is created (a failed match must
/// leave the IR as it was).
struct ScaleMatch {
  Value result;                 // what the fused norm replaces
  Value weight;                 // a per-channel constant, or null: a unit scale
  std::optional<double> offset; // Gemma's `* (1 + w)`: added to weight
};

/// `normalized` (through casts) times a per-channel constant scale, or
/// `normalized` itself with a unit scale. Cleanup folds `x * 1` away, so a
/// norm whose weights are all ones (how transformers initializes them, and
/// how some exports look) has no scale Mul left; accepting the normalization
/// alone, rather than keeping cleanup from folding, also covers exporters
/// and ONNX optimizers that drop the Mul themselves. A Mul by a value that
/// is not a constant (a gate, a dequantized weight) stays after the norm; a
/// Mul by a constant that does not broadcast per channel is refused, since
/// the norm could then be mistaken for a different computation.
FailureOr<ScaleMatch> matchScale(Value normalized, std::string &why) {
  int64_t n = dimOf(normalized, -1), rank = rankOf(normalized);
  Value v = normalized;
  while (Operation *u = soleUser(v)) {
    auto cast = dyn_cast<CastOp>(u);
    if (!cast || !isa<FloatType>(cast.getOutput().getType().getElementType()))
      break;
    v = cast.getOutput();
  }
  auto mul = dyn_cast_or_null<MulOp>(soleUser(v));
  Value w = mul ? otherOperand(mul, v) : nullptr;
  if (auto add = w ? w.getDefiningOp<AddOp>() : nullptr) {
    Value base = isConstant(add.getA()) && !scalarConstant(add.getA()) ? add.getA() : add.getB();
    std::optional<double> offset = scalarConstant(otherOperand(add, base));
    if (offset && isStaticF32(base, 1) && dimOf(base, 0) == n && readF32Weight(base))
      return ScaleMatch{mul.getC(), base, offset};
  }
  if (w && isConstant(w)) {
    if (!isPerChannelConstant(w, n, rank)) {
      why = "the normalized value is multiplied by a constant that is not a per-channel scale "
            "(shape [D] or broadcast to it, D the normalized dim)";
      return failure();
    }
    return ScaleMatch{mul.getC(), w, std::nullopt};
  }
  if (n <= 0) {
    why = "no constant scale follows and the normalized dim is not static (for a unit scale)";
    return failure();
  }
  // The norm replaces the casts too (back to the input's type in a
  // mixed-precision graph), as it does when a scale Mul follows them.
  return ScaleMatch{v, Value(), std::nullopt};
}

/// The 1-D scale of `match`, created before `match.result`'s op.
Value materializeScale(PatternRewriter &rewriter, const ScaleMatch &match, Type elementType,
                       Location loc) {
  int64_t n = dimOf(match.result, -1);
  if (match.offset) {
    std::vector<float> data = *readF32Weight(match.weight);
    for (float &f : data)
      f += static_cast<float>(*match.offset);
    return makeF32Weight(rewriter, loc, cast<RankedTensorType>(match.weight.getType()), data,
                         constantName(match.weight) + ".plus_offset");
  }
  if (!match.weight)
    return splatConstant(rewriter, loc, RankedTensorType::get({n}, elementType), 1.0,
                         unitScaleName(loc));
  return perChannelWeight(rewriter, loc, match.weight, n);
}

/// The element type of a per-channel constant, or `fallback` for none.
Type elementTypeOr(Value v, Type fallback) {
  return v ? cast<TensorType>(v.getType()).getElementType() : fallback;
}

struct NormPattern : OpRewritePattern<ReduceMeanOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceMeanOp mean, PatternRewriter &rewriter) const override {
    Value data = mean.getData();
    if (Value squared = squaredOperand(data)) {
      // mean(d^2) with d = x - mean(x) is the second mean of a LayerNorm,
      // which is matched from its first one.
      if (auto sub = squared.getDefiningOp<SubOp>();
          sub && sub.getB().getDefiningOp<ReduceMeanOp>())
        return rewriter.notifyMatchFailure(mean, "variance of a LayerNorm (matched at its mean)");
      // mean(x^2) - mean(x)^2 is the variance of ONNX's expanded LayerNorm.
      for (Operation *u : mean.getReduced().getUsers())
        if (auto sub = dyn_cast<SubOp>(u); sub && sub.getA() == mean.getReduced())
          if (auto sq = sub.getB().getDefiningOp<MulOp>(); sq && sq.getA() == sq.getB())
            if (auto m = sq.getA().getDefiningOp<ReduceMeanOp>(); m && m.getData() == squared)
              return rewriter.notifyMatchFailure(mean,
                                                 "variance of a LayerNorm (matched at its mean)");
      return rewriteRms(mean, skipCasts(squared), rewriter);
    }
    return rewriteLayerNorm(mean, rewriter);
  }

  LogicalResult rewriteRms(ReduceMeanOp mean, Value x, PatternRewriter &rewriter) const {
    std::string why;
    if (!isKernelFloat(x))
      return rewriter.notifyMatchFailure(mean, "RMSNorm: not f32, f16 or bf16");
    auto inv = matchInverseStd(mean, x, why);
    if (failed(inv))
      return rewriter.notifyMatchFailure(mean, "RMSNorm: " + why);
    auto scaled = matchScale(inv->first, why);
    if (failed(scaled))
      return rewriter.notifyMatchFailure(mean, "RMSNorm: " + why);
    Type resultType = scaled->result.getType();
    Type et = cast<TensorType>(x.getType()).getElementType();
    if (cast<TensorType>(resultType).getElementType() != et)
      return rewriter.notifyMatchFailure(mean,
                                         "RMSNorm: the input and output element types differ");
    if (elementTypeOr(scaled->weight, et) != et)
      return rewriter.notifyMatchFailure(mean,
                                         "RMSNorm: the scale's element type is not the input's");
    Operation *last = scaled->result.getDefiningOp();
    rewriter.setInsertionPoint(last);
    Value w = materializeScale(rewriter, *scaled, et, mean.getLoc());
    auto norm = rewriter.create<RmsNormOp>(
        mean.getLoc(), resultType, x, w, rewriter.getF32FloatAttr(static_cast<float>(inv->second)));
    rewriter.replaceOp(last, norm.getY());
    return success();
  }

  LogicalResult rewriteLayerNorm(ReduceMeanOp mean, PatternRewriter &rewriter) const {
    Value x = mean.getData();
    SubOp sub;
    for (Operation *u : mean.getReduced().getUsers())
      if (auto s = dyn_cast<SubOp>(u); s && s.getA() == x && s.getB() == mean.getReduced())
        sub = s;
    if (!sub)
      return rewriter.notifyMatchFailure(mean, "neither x^2 (RMSNorm) nor x - mean (LayerNorm) "
                                               "follows the mean");
    ReduceMeanOp var;
    for (Operation *u : sub.getC().getUsers())
      for (Value r : u->getResults())
        if (squaredOperand(r) == sub.getC())
          for (Operation *uu : r.getUsers())
            if (auto m = dyn_cast<ReduceMeanOp>(uu))
              var = m;
    if (!var)
      return rewriter.notifyMatchFailure(mean, "LayerNorm: no mean of (x - mean)^2");
    if (mean.getKeepdims() != 1 || !mean.getAxes() || !isLastAxis(mean.getAxes(), rankOf(x)))
      return rewriter.notifyMatchFailure(mean, "LayerNorm: the mean is not over the last dim");
    std::string why;
    auto inv = matchInverseStd(var, sub.getC(), why);
    if (failed(inv))
      return rewriter.notifyMatchFailure(mean, "LayerNorm: " + why);
    auto scaled = matchScale(inv->first, why);
    if (failed(scaled))
      return rewriter.notifyMatchFailure(mean, "LayerNorm: " + why);
    Type et = cast<TensorType>(x.getType()).getElementType();
    if (!isKernelFloat(x) || elementTypeOr(scaled->weight, et) != et)
      return rewriter.notifyMatchFailure(
          mean, "LayerNorm: not f32, f16 or bf16, or the scale's element type is not the input's");
    // The bias: an Add of a per-channel constant (cleanup folds a zero bias
    // away, which leaves none). An Add of anything else stays after the norm.
    Value bias, result = scaled->result;
    if (auto add = dyn_cast_or_null<AddOp>(soleUser(result))) {
      Value b = otherOperand(add, result);
      if (b && isPerChannelConstant(b, dimOf(x, -1), rankOf(x)) && elementTypeOr(b, et) == et &&
          add.getC().getType() == result.getType()) {
        bias = b;
        result = add.getC();
      }
    }
    Operation *last = result.getDefiningOp();
    rewriter.setInsertionPoint(last);
    Value w = materializeScale(rewriter, *scaled, et, mean.getLoc());
    if (bias)
      bias = perChannelWeight(rewriter, mean.getLoc(), bias, dimOf(x, -1));
    auto norm = rewriter.create<LayerNormalizationOp>(
        mean.getLoc(), result.getType(), x, w, bias, rewriter.getI64IntegerAttr(-1),
        rewriter.getF32FloatAttr(static_cast<float>(inv->second)), rewriter.getI64IntegerAttr(1));
    rewriter.replaceOp(last, norm.getY());
    return success();
  }
};

/// Whether Add(a, b) is a residual add the fused kernel can take: both
/// operands of one static-rank type (no broadcasting).
bool isResidualAdd(AddOp add) {
  return add && add.getA().getType() == add.getB().getType() && rankOf(add.getA()) >= 1 &&
         isKernelFloat(add.getA()) && add.getA() != add.getB();
}

struct AddRmsNormPattern : OpRewritePattern<RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RmsNormOp norm, PatternRewriter &rewriter) const override {
    auto add = norm.getX().getDefiningOp<AddOp>();
    if (!isResidualAdd(add))
      return failure();
    // At the Add: its other users (the next residual) may precede the norm.
    rewriter.setInsertionPoint(add);
    auto fused = rewriter.create<AddRmsNormOp>(norm.getLoc(), add.getC().getType(),
                                               norm.getY().getType(), add.getA(), add.getB(),
                                               norm.getScale(), norm.getEpsilonAttr());
    rewriter.replaceAllUsesWith(add.getC(), fused.getSum());
    rewriter.replaceOp(norm, fused.getY());
    rewriter.eraseOp(add);
    return success();
  }
};

struct AddLayerNormPattern : OpRewritePattern<LayerNormalizationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormalizationOp norm,
                                PatternRewriter &rewriter) const override {
    auto add = norm.getX().getDefiningOp<AddOp>();
    if (!isResidualAdd(add) || norm.getStashType() != 1 ||
        !(norm.getAxis() == -1 || norm.getAxis() == rankOf(norm.getX()) - 1) ||
        rankOf(norm.getScale()) != 1 || (norm.getB() && rankOf(norm.getB()) != 1))
      return failure();
    rewriter.setInsertionPoint(add);
    auto fused = rewriter.create<AddLayerNormOp>(
        norm.getLoc(), add.getC().getType(), norm.getY().getType(), add.getA(), add.getB(),
        norm.getScale(), norm.getB(), norm.getEpsilonAttr());
    rewriter.replaceAllUsesWith(add.getC(), fused.getSum());
    rewriter.replaceOp(norm, fused.getY());
    rewriter.eraseOp(add);
    return success();
  }
};

} // namespace

void populateNormPatterns(RewritePatternSet &patterns) {
  patterns.add<NormPattern>(patterns.getContext());
}

void populateResidualNormPatterns(RewritePatternSet &patterns) {
  patterns.add<AddRmsNormPattern, AddLayerNormPattern>(patterns.getContext());
}

} // namespace kiln::inject
