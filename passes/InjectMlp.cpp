//===- InjectMlp.cpp - GELU forms and the gated MLP -----------------------===//
//
//   0.5 * x * (1 + erf(x / sqrt(2)))                         -> gelu
//   0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))    -> gelu {tanh}
//   linear(act(x @ Wg) * (x @ Wu), Wd)                       -> gated_mlp
//   linear(act(y[:F]) * y[F:], Wd), y = x @ [Wg|Wu]          -> gated_mlp
//
// GELU is rooted at its Erf/Tanh; the products around `1 + erf` may be
// grouped in any order. The gated MLP is rooted at the down projection.
//
//===----------------------------------------------------------------------===//

#include "passes/InjectPatterns.h"
#include "passes/InjectUtils.h"

#include <cmath>

using namespace mlir;

namespace kiln::inject {
namespace {

bool near(std::optional<double> v, double want) {
  return v && std::fabs(*v - want) <= 1e-4 * std::fabs(want);
}

/// The leaves of a tree of single-use Muls rooted at `v` (v itself when it
/// is not such a Mul).
void mulLeaves(Value v, SmallVectorImpl<Value> &leaves, int depth = 0) {
  auto mul = v.getDefiningOp<MulOp>();
  if (mul && depth < 3 && v.hasOneUse()) {
    mulLeaves(mul.getA(), leaves, depth + 1);
    mulLeaves(mul.getB(), leaves, depth + 1);
    return;
  }
  leaves.push_back(v);
}

/// From `onePlus` (1 + erf(...) or 1 + tanh(...)) climbs the Muls that make
/// it 0.5 * x * onePlus; returns the outermost Mul or null.
Operation *matchHalfXProduct(Value onePlus, Value x) {
  Value cur = onePlus;
  bool haveX = false, haveHalf = false;
  for (int step = 0; step < 3; ++step) {
    auto mul = dyn_cast_or_null<MulOp>(soleUser(cur));
    if (!mul)
      return nullptr;
    SmallVector<Value> leaves;
    mulLeaves(otherOperand(mul, cur), leaves);
    for (Value leaf : leaves) {
      if (leaf == x && !haveX)
        haveX = true;
      else if (near(scalarConstant(leaf), 0.5) && !haveHalf)
        haveHalf = true;
      else
        return nullptr;
    }
    if (haveX && haveHalf)
      return mul;
    cur = mul.getC();
  }
  return nullptr;
}

/// `v` = 1 + t (either order) with `t` the only other operand.
AddOp onePlus(Value t) {
  auto add = dyn_cast_or_null<AddOp>(soleUser(t));
  if (!add || !near(scalarConstant(otherOperand(add, t)), 1.0))
    return nullptr;
  return add;
}

/// The shared tail of both GELU forms: `t` (erf or tanh of x's argument) is
/// followed by `1 + t` and multiplied by 0.5 * x; replaces the product.
LogicalResult rewriteGelu(Operation *root, Value t, Value x, StringRef fn, StringRef approximate,
                          PatternRewriter &rewriter) {
  if (!isKernelFloat(x))
    return rewriter.notifyMatchFailure(root, "GELU: not f32, f16 or bf16");
  AddOp add = onePlus(t);
  if (!add)
    return rewriter.notifyMatchFailure(root, "GELU: " + fn + "(.) is not followed by + 1");
  Operation *product = matchHalfXProduct(add.getC(), x);
  if (!product)
    return rewriter.notifyMatchFailure(root,
                                       "GELU: 1 + " + fn + "(.) is not multiplied by 0.5 * x");
  rewriter.setInsertionPoint(product);
  auto gelu = rewriter.create<GeluOp>(root->getLoc(), product->getResult(0).getType(), x,
                                      rewriter.getStringAttr(approximate));
  rewriter.replaceOp(product, gelu.getY());
  return success();
}

struct GeluErf : OpRewritePattern<ErfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ErfOp erf, PatternRewriter &rewriter) const override {
    Value z = erf.getX(), x;
    if (auto div = z.getDefiningOp<DivOp>();
        div && near(scalarConstant(div.getB()), std::sqrt(2.0)))
      x = div.getA();
    else if (auto mul = z.getDefiningOp<MulOp>()) {
      for (Value side : {mul.getA(), mul.getB()})
        if (near(scalarConstant(otherOperand(mul, side)), 1.0 / std::sqrt(2.0)))
          x = side;
    }
    if (!x)
      return rewriter.notifyMatchFailure(erf, "GELU: erf's argument is not x / sqrt(2)");
    return rewriteGelu(erf, erf.getY(), x, "erf", "none", rewriter);
  }
};

/// x + 0.044715 * x^3 (x^3 as Pow(x, 3) or x * x * x); returns x.
Value cubicInner(Value v) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add)
    return nullptr;
  for (Value x : {add.getA(), add.getB()}) {
    SmallVector<Value> leaves;
    mulLeaves(otherOperand(add, x), leaves);
    int xs = 0;
    bool coeff = false;
    for (Value leaf : leaves) {
      if (leaf == x)
        ++xs;
      else if (auto pow = leaf.getDefiningOp<PowOp>();
               pow && pow.getA() == x && near(scalarConstant(pow.getB()), 3.0))
        xs += 3;
      else if (near(scalarConstant(leaf), 0.044715))
        coeff = true;
      else if (auto sq = leaf.getDefiningOp<MulOp>(); sq && sq.getA() == x && sq.getB() == x)
        xs += 2;
      else
        xs = -100;
    }
    if (xs == 3 && coeff)
      return x;
  }
  return nullptr;
}

struct GeluTanh : OpRewritePattern<TanhOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TanhOp tanh, PatternRewriter &rewriter) const override {
    auto scale = tanh.getX().getDefiningOp<MulOp>();
    Value x;
    if (scale)
      for (Value side : {scale.getA(), scale.getB()})
        if (near(scalarConstant(otherOperand(scale, side)), std::sqrt(2.0 / M_PI)))
          x = cubicInner(side);
    if (!x)
      return rewriter.notifyMatchFailure(
          tanh, "GELU: tanh's argument is not sqrt(2/pi) * (x + 0.044715 x^3)");
    return rewriteGelu(tanh, tanh.getY(), x, "tanh", "tanh", rewriter);
  }
};

/// The gate: an activated projection of x, or an activation of the first
/// half of a fused gate/up projection.
struct Gate {
  LinearOp gate;  // separate projections
  LinearOp fused; // one [Wg|Wu] projection split in two
  std::string activation;
};

std::optional<std::string> activationOf(Operation *op, Value &input) {
  if (auto g = dyn_cast_or_null<GeluOp>(op)) {
    input = g.getX();
    return std::string(g.getApproximate() == "tanh" ? "gelu_tanh" : "gelu");
  }
  if (auto mul = dyn_cast_or_null<MulOp>(op))
    for (Value side : {mul.getA(), mul.getB()})
      if (auto sig = side.getDefiningOp<SigmoidOp>();
          sig && sig.getX() == otherOperand(mul, side)) {
        input = sig.getX();
        return std::string("silu");
      }
  return std::nullopt;
}

/// y[..., half*F : (half+1)*F] of a linear's output, through Split or
/// Slice; returns the linear.
LinearOp halfOf(Value v, int half) {
  if (auto split = v.getDefiningOp<SplitOp>()) {
    if (split.getNumResults() != 2 ||
        cast<OpResult>(v).getResultNumber() != static_cast<unsigned>(half) ||
        dimOf(split.getOutputs()[0], -1) != dimOf(split.getOutputs()[1], -1) ||
        split.getAxis() != rankOf(v) - 1 && split.getAxis() != -1)
      return nullptr;
    return split.getInput().getDefiningOp<LinearOp>();
  }
  if (auto slice = v.getDefiningOp<SliceOp>()) {
    auto linear = slice.getData().getDefiningOp<LinearOp>();
    if (!linear || !slice.getAxes() || !isLastAxis(slice.getAxes(), rankOf(v)))
      return nullptr;
    auto starts = getConstantIntValues(slice.getStarts());
    int64_t f = dimOf(v, -1), n = dimOf(linear.getY(), -1);
    if (!starts || starts->size() != 1 || f < 0 || n != 2 * f || (*starts)[0] != half * f)
      return nullptr;
    if (slice.getSteps())
      if (auto steps = getConstantIntValues(slice.getSteps()); !steps || (*steps)[0] != 1)
        return nullptr;
    return linear;
  }
  return nullptr;
}

/// Whether `v` is an activation's output: a linear with its activation
/// folded in, GELU, SiLU (x * sigmoid(x)), or an activation op left unfused.
bool isActivated(Value v) {
  Operation *op = v.getDefiningOp();
  if (auto linear = dyn_cast_or_null<LinearOp>(op))
    return linear.getActivation() != "none";
  Value input;
  return activationOf(op, input) || isa_and_nonnull<SigmoidOp, ReluOp, GeluOp, TanhOp>(op);
}

struct GatedMlp : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp down, PatternRewriter &rewriter) const override {
    auto mul = down.getX().getDefiningOp<MulOp>();
    if (!mul || down.getActivation() != "none")
      return failure();
    // Only a product with an activated factor is a gated MLP that failed. Any
    // other linear of a product (a projection of an unfused norm's x * inv,
    // say) is not an MLP at all: blaming the MLP there would hide the part
    // of the layer that really failed, which reports its own reason.
    if (!isActivated(mul.getA()) && !isActivated(mul.getB()))
      return failure();
    if (down.getBias())
      return rewriter.notifyMatchFailure(down, "gated MLP: the down projection has a bias");
    for (Value gateSide : {mul.getA(), mul.getB()}) {
      Value upSide = otherOperand(mul, gateSide);
      // Separate projections: the activation was folded into the gate's linear.
      auto gate = gateSide.getDefiningOp<LinearOp>();
      auto up = upSide.getDefiningOp<LinearOp>();
      if (gate && up && gate.getActivation() != "none" && up.getActivation() == "none" &&
          gate.getX() == up.getX()) {
        if (gate.getBias() || up.getBias())
          return rewriter.notifyMatchFailure(down, "gated MLP: gate/up projections have a bias");
        if (gate.getActivation() == "relu")
          return rewriter.notifyMatchFailure(down, "gated MLP: ReLU gates are not supported");
        int64_t f = dimOf(gate.getW(), 1);
        if (f <= 0 || dimOf(up.getW(), 1) != f || dimOf(down.getW(), 0) != f)
          return rewriter.notifyMatchFailure(down, "gated MLP: gate, up and down widths differ");
        rewriter.setInsertionPoint(down);
        auto w = concatColumns(rewriter, down.getLoc(), {gate.getW(), up.getW()},
                               constantName(gate.getW()) + ".gate_up");
        if (failed(w))
          return rewriter.notifyMatchFailure(down, "gated MLP: weights are not f32 constants");
        rewriter.replaceOpWithNewOp<GatedMlpOp>(down, down.getY().getType(), gate.getX(), *w,
                                                down.getW(), gate.getActivationAttr());
        return success();
      }
      // One fused gate/up projection, split in halves.
      Value actInput;
      std::optional<std::string> act = activationOf(gateSide.getDefiningOp(), actInput);
      if (!act)
        continue;
      LinearOp fused = halfOf(actInput, 0);
      if (!fused || halfOf(upSide, 1) != fused)
        continue;
      if (fused.getBias() || fused.getActivation() != "none")
        return rewriter.notifyMatchFailure(down, "gated MLP: the gate_up projection has a bias");
      if (dimOf(fused.getW(), 1) != 2 * dimOf(down.getW(), 0))
        return rewriter.notifyMatchFailure(down, "gated MLP: gate_up is not twice down's width");
      rewriter.replaceOpWithNewOp<GatedMlpOp>(down, down.getY().getType(), fused.getX(),
                                              fused.getW(), down.getW(),
                                              rewriter.getStringAttr(*act));
      return success();
    }
    return rewriter.notifyMatchFailure(
        down, "gated MLP: the down projection's input is not act(x @ Wg) * (x @ Wu)");
  }
};

} // namespace

void populateGeluPatterns(RewritePatternSet &patterns) {
  patterns.add<GeluErf, GeluTanh>(patterns.getContext());
}

void populateGatedMlpPatterns(RewritePatternSet &patterns) {
  patterns.add<GatedMlp>(patterns.getContext());
}

} // namespace kiln::inject
