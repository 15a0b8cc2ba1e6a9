//===- InjectLinear.cpp - projections: linear, bias, activations, QKV -----===//
//
//   MatMul(x, W) / Gemm(x, W, b)          -> linear(x, W[, b])
//   Add(linear(x, W), b)                  -> linear(x, W, b)
//   Reshape(linear(Reshape(x, [-1, K])))  -> linear(x)   (2-D Gemm exports)
//   act(linear(x, W, b))                  -> linear(x, W, b) {activation}
//   linear(x, Wq), linear(x, Wk), ...     -> split(linear(x, [Wq|Wk|...]))
//
// W must be a constant: a MatMul of two activations (attention) is not a
// projection.
//
//===----------------------------------------------------------------------===//

#include "passes/InjectPatterns.h"
#include "passes/InjectUtils.h"

using namespace mlir;

namespace kiln::inject {
namespace {

StringAttr noActivation(PatternRewriter &rewriter) { return rewriter.getStringAttr("none"); }

struct MatMulToLinear : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatMulOp op, PatternRewriter &rewriter) const override {
    if (!isConstant(op.getB()))
      return rewriter.notifyMatchFailure(op, "the right operand is not a constant weight");
    if (rankOf(op.getB()) != 2 || rankOf(op.getA()) < 1)
      return rewriter.notifyMatchFailure(op, "the weight is not 2-D");
    if (!isKernelFloat(op.getA()) ||
        op.getA().getType().getElementType() != op.getB().getType().getElementType())
      return rewriter.notifyMatchFailure(op, "not an f32/f16/bf16 product");
    rewriter.replaceOpWithNewOp<LinearOp>(op, op.getY().getType(), op.getA(), op.getB(), Value(),
                                          noActivation(rewriter));
    return success();
  }
};

struct GemmToLinear : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GemmOp op, PatternRewriter &rewriter) const override {
    if (!isConstant(op.getB()) || rankOf(op.getB()) != 2)
      return rewriter.notifyMatchFailure(op, "B is not a 2-D constant weight");
    if (op.getTransA() != 0 || op.getAlpha().convertToFloat() != 1.0f)
      return rewriter.notifyMatchFailure(op, "transA or alpha != 1");
    Value bias = op.getC();
    if (bias && (op.getBeta().convertToFloat() != 1.0f || !isConstant(bias) || rankOf(bias) != 1 ||
                 dimOf(bias, 0) != dimOf(op.getY(), 1)))
      return rewriter.notifyMatchFailure(op, "C is not a 1-D constant bias with beta 1");
    if (!isKernelFloat(op.getA()))
      return rewriter.notifyMatchFailure(op, "not an f32/f16/bf16 product");
    Value w = op.getB();
    if (op.getTransB() != 0) {
      auto t = transposeWeight(rewriter, op.getLoc(), w);
      if (failed(t))
        return rewriter.notifyMatchFailure(op, "cannot transpose B (not an f32 constant)");
      w = *t;
    }
    rewriter.replaceOpWithNewOp<LinearOp>(op, op.getY().getType(), op.getA(), w, bias,
                                          noActivation(rewriter));
    return success();
  }
};

/// A linear without bias or activation, used once (by the op being matched).
LinearOp plainLinear(Value v) {
  auto linear = v.getDefiningOp<LinearOp>();
  if (!linear || linear.getBias() || linear.getActivation() != "none" || !v.hasOneUse())
    return nullptr;
  return linear;
}

struct LinearBias : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (Value side : {add.getA(), add.getB()}) {
      LinearOp linear = plainLinear(side);
      if (!linear)
        continue;
      Value b = otherOperand(add, side);
      if (!isConstant(b) || rankOf(b) != 1 || dimOf(b, 0) != dimOf(linear.getW(), 1) ||
          b.getType() !=
              RankedTensorType::get({dimOf(b, 0)}, linear.getW().getType().getElementType()) ||
          add.getC().getType() != linear.getY().getType())
        continue;
      rewriter.replaceOpWithNewOp<LinearOp>(add, add.getC().getType(), linear.getX(), linear.getW(),
                                            b, noActivation(rewriter));
      return success();
    }
    return failure();
  }
};

/// Reshape(linear(Reshape(x, [-1, K]))) restoring x's leading dims becomes
/// linear(x): the symbolic shapes prove the round trip.
struct CollapseLinearReshapes : OpRewritePattern<ReshapeOp> {
  CollapseLinearReshapes(MLIRContext *ctx, const ShapeInferenceContext *shapes)
      : OpRewritePattern(ctx), shapes(shapes) {}
  LogicalResult matchAndRewrite(ReshapeOp outer, PatternRewriter &rewriter) const override {
    auto linear = outer.getData().getDefiningOp<LinearOp>();
    if (!linear || !linear.getY().hasOneUse() || rankOf(linear.getX()) != 2)
      return failure();
    auto inner = linear.getX().getDefiningOp<ReshapeOp>();
    if (!inner)
      return failure();
    Value x = inner.getData();
    SymShape xs = shapes->getShape(x), ys = shapes->getShape(outer.getReshaped());
    if (!xs.ranked || !ys.ranked || xs.getRank() != ys.getRank() || xs.getRank() < 2)
      return failure();
    for (int64_t i = 0; i + 1 < xs.getRank(); ++i)
      if (!(xs.dims[i] == ys.dims[i]))
        return failure();
    if (!xs.dims.back().isStatic(dimOf(linear.getW(), 0)))
      return failure();
    rewriter.replaceOpWithNewOp<LinearOp>(outer, outer.getReshaped().getType(), x, linear.getW(),
                                          linear.getBias(), linear.getActivationAttr());
    return success();
  }
  const ShapeInferenceContext *shapes;
};

/// Folds an activation into the linear that feeds it.
LogicalResult foldActivation(Operation *act, Value input, StringRef activation,
                             PatternRewriter &rewriter, bool inputUsedTwice = false) {
  auto linear = input.getDefiningOp<LinearOp>();
  if (!linear)
    return rewriter.notifyMatchFailure(act, "the activation's input is not a projection (linear)");
  if (linear.getActivation() != "none")
    return rewriter.notifyMatchFailure(act, "the projection already has an activation");
  size_t uses = std::distance(input.getUses().begin(), input.getUses().end());
  if (uses != (inputUsedTwice ? 2u : 1u))
    return rewriter.notifyMatchFailure(act, "the projection's output has other users");
  rewriter.replaceOpWithNewOp<LinearOp>(act, act->getResult(0).getType(), linear.getX(),
                                        linear.getW(), linear.getBias(),
                                        rewriter.getStringAttr(activation));
  return success();
}

struct ReluIntoLinear : OpRewritePattern<ReluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReluOp op, PatternRewriter &rewriter) const override {
    return foldActivation(op, op.getX(), "relu", rewriter);
  }
};

struct GeluIntoLinear : OpRewritePattern<GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluOp op, PatternRewriter &rewriter) const override {
    return foldActivation(op, op.getX(), op.getApproximate() == "tanh" ? "gelu_tanh" : "gelu",
                          rewriter);
  }
};

/// x * sigmoid(x) with x a projection: SiLU (rooted at the Sigmoid).
struct SiluIntoLinear : OpRewritePattern<SigmoidOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SigmoidOp sig, PatternRewriter &rewriter) const override {
    auto mul = dyn_cast_or_null<MulOp>(soleUser(sig.getY()));
    if (!mul || otherOperand(mul, sig.getY()) != sig.getX())
      return rewriter.notifyMatchFailure(sig, "sigmoid(x) does not multiply x (not SiLU)");
    auto linear = sig.getX().getDefiningOp<LinearOp>();
    if (!linear)
      return rewriter.notifyMatchFailure(sig, "SiLU's input is not a projection (linear)");
    if (linear.getActivation() != "none")
      return rewriter.notifyMatchFailure(sig, "the projection already has an activation");
    if (std::distance(sig.getX().getUses().begin(), sig.getX().getUses().end()) != 2)
      return rewriter.notifyMatchFailure(sig, "the projection's output has other users");
    rewriter.setInsertionPoint(mul);
    auto fused =
        rewriter.create<LinearOp>(sig.getLoc(), mul.getC().getType(), linear.getX(), linear.getW(),
                                  linear.getBias(), rewriter.getStringAttr("silu"));
    rewriter.replaceOp(mul, fused.getY());
    return success();
  }
};

/// Sibling projections of one input (Q, K and V) become one linear over
/// concatenated weights, then a Split. Rooted at the first sibling.
struct FuseSiblingLinears : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp root, PatternRewriter &rewriter) const override {
    if (root.getActivation() != "none" || !isa<FloatType>(root.getW().getType().getElementType()) ||
        !isConstant(root.getW()))
      return failure();
    SmallVector<LinearOp> group;
    for (Operation *u : root.getX().getUsers()) {
      auto l = dyn_cast<LinearOp>(u);
      if (!l || l.getActivation() != "none" || !isConstant(l.getW()) ||
          l.getW().getType().getElementType() != root.getW().getType().getElementType() ||
          (l.getBias() && !isConstant(l.getBias())) || l->getBlock() != root->getBlock())
        continue;
      group.push_back(l);
    }
    if (group.size() < 2)
      return failure();
    llvm::sort(group, [](LinearOp a, LinearOp b) { return a->isBeforeInBlock(b); });
    if (group.front() != root)
      return failure();
    auto yType = dyn_cast<RankedTensorType>(root.getY().getType());
    if (!yType)
      return failure();
    SmallVector<Value> ws, bs;
    SmallVector<int64_t> sizes;
    bool anyBias = false;
    for (LinearOp l : group) {
      // Checked before anything is created: a failed match changes nothing.
      if (!isStaticFloat(l.getW(), 2) || (l.getBias() && (!isStaticFloat(l.getBias(), 1) ||
                                                          l.getBias().getType().getElementType() !=
                                                              l.getW().getType().getElementType())))
        return failure();
      ws.push_back(l.getW());
      sizes.push_back(dimOf(l.getW(), 1));
      anyBias |= static_cast<bool>(l.getBias());
    }
    rewriter.setInsertionPoint(root);
    std::string name = constantName(root.getW()) + ".fused";
    auto w = concatColumns(rewriter, root.getLoc(), ws, name);
    if (failed(w))
      return failure();
    // Cleanup folds a zero bias away, so siblings may differ in having one
    // (a k_proj whose bias is all zeros); the missing ones are zeros.
    if (anyBias)
      for (LinearOp l : group)
        bs.push_back(l.getBias()
                         ? l.getBias()
                         : splatConstant(rewriter, l.getLoc(),
                                         RankedTensorType::get({dimOf(l.getW(), 1)},
                                                               l.getW().getType().getElementType()),
                                         0.0, constantName(l.getW()) + ".zero_bias"));
    Value bias;
    if (!bs.empty()) {
      auto b = concat1D(rewriter, root.getLoc(), bs, name + ".bias");
      if (failed(b))
        return failure();
      bias = *b;
    }
    SmallVector<int64_t> dims(yType.getShape());
    dims.back() = dimOf(*w, 1);
    auto fused = rewriter.create<LinearOp>(root.getLoc(), yType.clone(dims), root.getX(), *w, bias,
                                           noActivation(rewriter));
    auto sizesType =
        RankedTensorType::get({static_cast<int64_t>(sizes.size())}, rewriter.getI64Type());
    Value sizesValue = rewriter.create<ConstantOp>(
        root.getLoc(), sizesType, DenseElementsAttr::get(sizesType, ArrayRef<int64_t>(sizes)),
        StringAttr());
    SmallVector<Type> types;
    for (LinearOp l : group)
      types.push_back(l.getY().getType());
    auto split = rewriter.create<SplitOp>(root.getLoc(), types, fused.getY(), sizesValue,
                                          rewriter.getI64IntegerAttr(rankOf(root.getY()) - 1),
                                          rewriter.getI64IntegerAttr(0));
    for (size_t i = 0; i < group.size(); ++i)
      rewriter.replaceOp(group[i], split.getResult(i));
    return success();
  }
};

} // namespace

void populateLinearPatterns(RewritePatternSet &patterns, const ShapeInferenceContext *shapes) {
  patterns.add<MatMulToLinear, GemmToLinear, LinearBias>(patterns.getContext());
  patterns.add<CollapseLinearReshapes>(patterns.getContext(), shapes);
}

void populateActivationPatterns(RewritePatternSet &patterns) {
  patterns.add<ReluIntoLinear, GeluIntoLinear, SiluIntoLinear>(patterns.getContext());
}

void populateSiblingPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseSiblingLinears>(patterns.getContext());
}

} // namespace kiln::inject
