//===- KilnFusedOps.cpp - verifiers and shapes of the fused ops -----------===//
//
// The fused ops' contract (docs/fused-ops.md) checked on what the types show:
// element types the kernels implement (f32, f16, bf16), ranks, the static
// dims that must agree, and attribute values. Dynamic dims are accepted; the
// runtime checks them on real shapes.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace kiln {
namespace {

Type elementOf(Value v) { return cast<TensorType>(v.getType()).getElementType(); }

/// The static dims of a ranked tensor (kDynamic for `?`), or nullopt.
std::optional<ArrayRef<int64_t>> dimsOf(Value v) {
  auto ranked = dyn_cast<RankedTensorType>(v.getType());
  if (!ranked)
    return std::nullopt;
  return ranked.getShape();
}

bool known(int64_t d) { return d != ShapedType::kDynamic; }

/// f32, f16 or bf16, and the same for every value in `values`.
LogicalResult expectKernelFloat(Operation *op, ValueRange values) {
  Type first = elementOf(values.front());
  if (!first.isF32() && !first.isF16() && !first.isBF16())
    return op->emitOpError() << "computes in f32, f16 or bf16, not " << first;
  for (Value v : values.drop_front())
    if (elementOf(v) != first)
      return op->emitOpError() << "operands and results must share the element type " << first
                               << ", got " << elementOf(v);
  return success();
}

/// A parameter the kernels read in its own dtype (a norm's scale and bias,
/// rotary's cos and sin): `x`'s element type, or f32 beside a half `x`.
LogicalResult expectParamFloat(Operation *op, Value x, Value param, StringRef what) {
  Type want = elementOf(x), got = elementOf(param);
  if (got == want || got.isF32())
    return success();
  return op->emitOpError() << what << " must be " << want << " or f32, got " << got;
}

LogicalResult expectRank(Operation *op, Value v, int64_t rank, StringRef what) {
  if (auto dims = dimsOf(v); dims && static_cast<int64_t>(dims->size()) != rank)
    return op->emitOpError() << what << " must have rank " << rank << ", got " << v.getType();
  return success();
}

LogicalResult expectMinRank(Operation *op, Value v, int64_t rank, StringRef what) {
  if (auto dims = dimsOf(v); dims && static_cast<int64_t>(dims->size()) < rank)
    return op->emitOpError() << what << " must have rank >= " << rank << ", got " << v.getType();
  return success();
}

/// Dim `i` (negative from the back) of `v`, or kDynamic when unranked.
int64_t dimOf(Value v, int64_t i) {
  auto dims = dimsOf(v);
  if (!dims || dims->empty())
    return ShapedType::kDynamic;
  int64_t rank = static_cast<int64_t>(dims->size());
  if (i < 0)
    i += rank;
  return i >= 0 && i < rank ? (*dims)[i] : ShapedType::kDynamic;
}

LogicalResult expectDimsEqual(Operation *op, int64_t a, int64_t b, StringRef what) {
  if (known(a) && known(b) && a != b)
    return op->emitOpError() << what << " must agree, got " << a << " and " << b;
  return success();
}

LogicalResult expectActivation(Operation *op, StringRef act, bool gated) {
  static constexpr StringLiteral kPlain[] = {"none", "relu", "gelu", "gelu_tanh", "silu"};
  static constexpr StringLiteral kGated[] = {"silu", "gelu", "gelu_tanh"};
  ArrayRef<StringLiteral> allowed = gated ? ArrayRef<StringLiteral>(kGated) : kPlain;
  if (llvm::is_contained(allowed, act))
    return success();
  auto diag = op->emitOpError() << "activation must be one of";
  for (StringLiteral a : allowed)
    diag << " '" << a << "'";
  return diag << ", got '" << act << "'";
}

/// A norm's operands: x `[..., D]` and scale (and bias) `[D]`.
LogicalResult verifyNorm(Operation *op, Value x, Value scale, Value bias, float epsilon) {
  if (failed(expectMinRank(op, x, 1, "x")) || failed(expectRank(op, scale, 1, "scale")) ||
      failed(expectDimsEqual(op, dimOf(x, -1), dimOf(scale, 0), "x's last dim and scale")))
    return failure();
  if (bias && (failed(expectRank(op, bias, 1, "bias")) ||
               failed(expectDimsEqual(op, dimOf(x, -1), dimOf(bias, 0), "x's last dim and bias"))))
    return failure();
  if (!(epsilon >= 0.0f))
    return op->emitOpError() << "epsilon must be >= 0, got " << epsilon;
  return success();
}

LogicalResult expectSameShape(Operation *op, Value a, Value b, StringRef what) {
  if (failed(verifyCompatibleShape(a.getType(), b.getType())))
    return op->emitOpError() << what << " must have the same shape, got " << a.getType() << " and "
                             << b.getType();
  return success();
}

/// `x`'s shape with its last dim replaced by `last`.
SymShape withLastDim(const SymShape &x, SymDim last) {
  if (!x.ranked || x.dims.empty())
    return SymShape::unranked();
  SymShape out = x;
  out.dims.back() = last;
  return out;
}

SymDim symDimOf(const ShapeInferenceContext &ctx, Value v, int64_t i) {
  SymShape s = ctx.getShape(v);
  if (!s.ranked || s.dims.empty())
    return SymDim::unknown();
  int64_t rank = s.getRank();
  if (i < 0)
    i += rank;
  return i >= 0 && i < rank ? s.dims[i] : SymDim::unknown();
}

/// Residual + norm: the sum and the normalized value both have a's shape.
LogicalResult inferResidualNorm(ShapeInferenceContext &ctx, Value a, Value sum, Value y) {
  SymShape shape = ctx.getShape(a);
  ctx.setResult(sum, elementOf(a), shape);
  ctx.setResult(y, elementOf(a), shape);
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Norms and activations
//===----------------------------------------------------------------------===//

LogicalResult RmsNormOp::verify() {
  if (failed(expectKernelFloat(*this, {getX(), getY()})) ||
      failed(expectParamFloat(*this, getX(), getScale(), "scale")) ||
      failed(verifyNorm(*this, getX(), getScale(), nullptr, getEpsilon().convertToFloat())))
    return failure();
  return expectSameShape(*this, getX(), getY(), "x and the result");
}

LogicalResult RmsNormOp::inferShapes(ShapeInferenceContext &ctx) {
  return inferUnaryOp(getOperation(), ctx);
}

LogicalResult AddRmsNormOp::verify() {
  if (failed(expectKernelFloat(*this, {getA(), getB(), getSum(), getY()})) ||
      failed(expectParamFloat(*this, getA(), getScale(), "scale")) ||
      failed(expectSameShape(*this, getA(), getB(), "a and b")) ||
      failed(verifyNorm(*this, getA(), getScale(), nullptr, getEpsilon().convertToFloat())))
    return failure();
  return success();
}

LogicalResult AddRmsNormOp::inferShapes(ShapeInferenceContext &ctx) {
  return inferResidualNorm(ctx, getA(), getSum(), getY());
}

LogicalResult AddLayerNormOp::verify() {
  if (failed(expectKernelFloat(*this, {getA(), getB(), getSum(), getY()})) ||
      failed(expectParamFloat(*this, getA(), getScale(), "scale")) ||
      (getBias() && failed(expectParamFloat(*this, getA(), getBias(), "bias"))) ||
      failed(expectSameShape(*this, getA(), getB(), "a and b")) ||
      failed(verifyNorm(*this, getA(), getScale(), getBias(), getEpsilon().convertToFloat())))
    return failure();
  return success();
}

LogicalResult AddLayerNormOp::inferShapes(ShapeInferenceContext &ctx) {
  return inferResidualNorm(ctx, getA(), getSum(), getY());
}

LogicalResult GeluOp::verify() {
  if (failed(expectKernelFloat(*this, {getX(), getY()})) ||
      failed(expectSameShape(*this, getX(), getY(), "x and the result")))
    return failure();
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError() << "approximate must be 'none' or 'tanh', got '" << getApproximate()
                         << "'";
  return success();
}

LogicalResult GeluOp::inferShapes(ShapeInferenceContext &ctx) {
  return inferUnaryOp(getOperation(), ctx);
}

//===----------------------------------------------------------------------===//
// Projections
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  SmallVector<Value> values = {getX(), getW(), getY()};
  if (getBias())
    values.push_back(getBias());
  if (failed(expectKernelFloat(*this, values)) || failed(expectMinRank(*this, getX(), 1, "x")) ||
      failed(expectRank(*this, getW(), 2, "w")) ||
      failed(expectDimsEqual(*this, dimOf(getX(), -1), dimOf(getW(), 0),
                             "x's last dim and w's rows")) ||
      failed(expectActivation(*this, getActivation(), /*gated=*/false)))
    return failure();
  if (getBias() && (failed(expectRank(*this, getBias(), 1, "bias")) ||
                    failed(expectDimsEqual(*this, dimOf(getW(), 1), dimOf(getBias(), 0),
                                           "w's columns and bias"))))
    return failure();
  return success();
}

LogicalResult LinearOp::inferShapes(ShapeInferenceContext &ctx) {
  ctx.setResult(getY(), elementOf(getX()),
                withLastDim(ctx.getShape(getX()), symDimOf(ctx, getW(), 1)));
  return success();
}

/// w_gate_up [K, 2F] beside w_down [F, N]: an even number of columns, twice
/// w_down's rows.
LogicalResult expectGatedWidths(Operation *op, Value wGateUp, Value wDown) {
  int64_t gateUp = dimOf(wGateUp, 1), down = dimOf(wDown, 0);
  if (known(gateUp) && gateUp % 2 != 0)
    return op->emitOpError() << "w_gate_up must have an even number of columns, got " << gateUp;
  if (known(gateUp) && known(down) && gateUp != 2 * down)
    return op->emitOpError() << "w_gate_up's columns (" << gateUp
                             << ") must be twice w_down's rows (" << down << ")";
  return success();
}

LogicalResult GatedMlpOp::verify() {
  if (failed(expectKernelFloat(*this, {getX(), getWGateUp(), getWDown(), getY()})) ||
      failed(expectMinRank(*this, getX(), 1, "x")) ||
      failed(expectRank(*this, getWGateUp(), 2, "w_gate_up")) ||
      failed(expectRank(*this, getWDown(), 2, "w_down")) ||
      failed(expectDimsEqual(*this, dimOf(getX(), -1), dimOf(getWGateUp(), 0),
                             "x's last dim and w_gate_up's rows")) ||
      failed(expectActivation(*this, getActivation(), /*gated=*/true)))
    return failure();
  return expectGatedWidths(*this, getWGateUp(), getWDown());
}

LogicalResult GatedMlpOp::inferShapes(ShapeInferenceContext &ctx) {
  ctx.setResult(getY(), elementOf(getX()),
                withLastDim(ctx.getShape(getX()), symDimOf(ctx, getWDown(), 1)));
  return success();
}

LogicalResult MoeOp::verify() {
  if (failed(expectKernelFloat(*this, {getX(), getRouterW(), getWGateUp(), getWDown(), getY()})) ||
      failed(expectMinRank(*this, getX(), 1, "x")) ||
      failed(expectRank(*this, getRouterW(), 2, "router_w")) ||
      failed(expectRank(*this, getWGateUp(), 3, "w_gate_up")) ||
      failed(expectRank(*this, getWDown(), 3, "w_down")) ||
      failed(expectDimsEqual(*this, dimOf(getX(), -1), dimOf(getRouterW(), 0),
                             "x's last dim and router_w's rows")) ||
      failed(expectDimsEqual(*this, dimOf(getRouterW(), 1), dimOf(getWGateUp(), 0),
                             "router_w's experts and w_gate_up's")) ||
      failed(expectDimsEqual(*this, dimOf(getWGateUp(), 0), dimOf(getWDown(), 0),
                             "w_gate_up's experts and w_down's")) ||
      failed(expectDimsEqual(*this, dimOf(getX(), -1), dimOf(getWGateUp(), 1),
                             "x's last dim and w_gate_up's rows")) ||
      failed(expectDimsEqual(*this, dimOf(getX(), -1), dimOf(getWDown(), 2),
                             "x's last dim and w_down's columns")) ||
      failed(expectActivation(*this, getActivation(), /*gated=*/true)))
    return failure();
  int64_t gateUp = dimOf(getWGateUp(), 2), down = dimOf(getWDown(), 1);
  if (known(gateUp) && known(down) && gateUp != 2 * down)
    return emitOpError() << "w_gate_up's columns (" << gateUp << ") must be twice w_down's rows ("
                         << down << ")";
  int64_t experts = dimOf(getRouterW(), 1);
  if (getTopK() < 1 || (known(experts) && static_cast<int64_t>(getTopK()) > experts))
    return emitOpError() << "top_k must be in [1, experts], got " << getTopK();
  if (getNormalize() != 0 && getNormalize() != 1)
    return emitOpError() << "normalize must be 0 or 1, got " << getNormalize();
  return success();
}

LogicalResult MoeOp::inferShapes(ShapeInferenceContext &ctx) {
  ctx.setResult(getY(), elementOf(getX()), ctx.getShape(getX()));
  return success();
}

/// An f32 tensor: the int8 ops' activations and scales.
LogicalResult expectF32(Operation *op, Value v, StringRef what) {
  if (!elementOf(v).isF32())
    return op->emitOpError() << what << " must be f32, got " << elementOf(v);
  return success();
}

/// The int8 ops' `activations`: f32 or int8.
LogicalResult expectActivations(Operation *op, StringRef activations) {
  if (activations == "f32" || activations == "int8")
    return success();
  return op->emitOpError() << "activations must be 'f32' or 'int8', got '" << activations << "'";
}

/// An int8 weight `w` [K, N] and its scale [N].
LogicalResult expectQuantizedWeight(Operation *op, Value w, Value scale, StringRef what) {
  if (failed(expectRank(op, w, 2, what)) || failed(expectRank(op, scale, 1, "its scale")) ||
      failed(expectF32(op, scale, "its scale")))
    return failure();
  return expectDimsEqual(op, dimOf(w, 1), dimOf(scale, 0), (what + "'s columns and scale").str());
}

LogicalResult LinearQ8Op::verify() {
  if (failed(expectF32(*this, getX(), "x")) || failed(expectF32(*this, getY(), "the result")) ||
      failed(expectMinRank(*this, getX(), 1, "x")) ||
      failed(expectQuantizedWeight(*this, getW(), getScale(), "w")) ||
      failed(expectDimsEqual(*this, dimOf(getX(), -1), dimOf(getW(), 0),
                             "x's last dim and w's rows")) ||
      failed(expectActivation(*this, getActivation(), /*gated=*/false)) ||
      failed(expectActivations(*this, getActivations())))
    return failure();
  if (getBias() && (failed(expectF32(*this, getBias(), "bias")) ||
                    failed(expectRank(*this, getBias(), 1, "bias")) ||
                    failed(expectDimsEqual(*this, dimOf(getW(), 1), dimOf(getBias(), 0),
                                           "w's columns and bias"))))
    return failure();
  return success();
}

LogicalResult LinearQ8Op::inferShapes(ShapeInferenceContext &ctx) {
  ctx.setResult(getY(), elementOf(getX()),
                withLastDim(ctx.getShape(getX()), symDimOf(ctx, getW(), 1)));
  return success();
}

LogicalResult GatedMlpQ8Op::verify() {
  if (failed(expectF32(*this, getX(), "x")) || failed(expectF32(*this, getY(), "the result")) ||
      failed(expectMinRank(*this, getX(), 1, "x")) ||
      failed(expectQuantizedWeight(*this, getWGateUp(), getScaleGateUp(), "w_gate_up")) ||
      failed(expectQuantizedWeight(*this, getWDown(), getScaleDown(), "w_down")) ||
      failed(expectDimsEqual(*this, dimOf(getX(), -1), dimOf(getWGateUp(), 0),
                             "x's last dim and w_gate_up's rows")) ||
      failed(expectActivation(*this, getActivation(), /*gated=*/true)) ||
      failed(expectActivations(*this, getActivations())))
    return failure();
  return expectGatedWidths(*this, getWGateUp(), getWDown());
}

LogicalResult GatedMlpQ8Op::inferShapes(ShapeInferenceContext &ctx) {
  ctx.setResult(getY(), elementOf(getX()),
                withLastDim(ctx.getShape(getX()), symDimOf(ctx, getWDown(), 1)));
  return success();
}

//===----------------------------------------------------------------------===//
// Rotary and attention
//===----------------------------------------------------------------------===//

LogicalResult RotaryOp::verify() {
  if (failed(expectKernelFloat(*this, {getX(), getY()})) ||
      failed(expectKernelFloat(*this, {getCos(), getSin()})) ||
      failed(expectParamFloat(*this, getX(), getCos(), "cos")) ||
      failed(expectMinRank(*this, getX(), 1, "x")) ||
      failed(expectSameShape(*this, getX(), getY(), "x and the result")) ||
      failed(expectSameShape(*this, getCos(), getSin(), "cos and sin")))
    return failure();
  int64_t rotary = getRotaryDim();
  if (rotary <= 0 || rotary % 2 != 0)
    return emitOpError() << "rotary_dim must be positive and even, got " << rotary;
  if (getInterleaved() != 0 && getInterleaved() != 1)
    return emitOpError() << "interleaved must be 0 or 1, got " << getInterleaved();
  int64_t d = dimOf(getX(), -1);
  if (known(d) && rotary > d)
    return emitOpError() << "rotary_dim " << rotary << " exceeds x's last dim " << d;
  if (failed(expectDimsEqual(*this, dimOf(getCos(), -1), rotary, "cos's last dim and rotary_dim")))
    return failure();
  auto x = dimsOf(getX()), c = dimsOf(getCos());
  if (x && c) {
    if (x->size() != c->size())
      return emitOpError() << "cos and sin must have x's rank " << x->size() << ", got "
                           << getCos().getType();
    for (size_t i = 0; i + 1 < x->size(); ++i)
      if (known((*c)[i]) && (*c)[i] != 1 && known((*x)[i]) && (*c)[i] != (*x)[i])
        return emitOpError() << "cos dim " << i << " (" << (*c)[i] << ") must be 1 or x's ("
                             << (*x)[i] << ")";
  }
  return success();
}

LogicalResult RotaryOp::inferShapes(ShapeInferenceContext &ctx) {
  return inferUnaryOp(getOperation(), ctx);
}

/// A soft-cap, when present, is finite and positive.
static LogicalResult verifySoftCap(Operation *op, std::optional<APFloat> cap) {
  if (!cap)
    return success();
  float c = cap->convertToFloat();
  if (!std::isfinite(c) || c <= 0)
    return op->emitOpError() << "softcap must be finite and positive (absent for none), got " << c;
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(expectKernelFloat(*this, {getQ(), getK(), getV(), getOutput()})) ||
      failed(expectRank(*this, getQ(), 4, "q")) || failed(expectRank(*this, getK(), 4, "k")) ||
      failed(expectRank(*this, getV(), 4, "v")) ||
      failed(expectRank(*this, getOutput(), 4, "the result")) ||
      failed(expectDimsEqual(*this, dimOf(getQ(), 3), dimOf(getK(), 3), "q's and k's head dims")) ||
      failed(expectDimsEqual(*this, dimOf(getK(), 1), dimOf(getV(), 1), "k's and v's heads")) ||
      failed(expectDimsEqual(*this, dimOf(getK(), 2), dimOf(getV(), 2), "k's and v's lengths")))
    return failure();
  int64_t hq = dimOf(getQ(), 1), hkv = dimOf(getK(), 1);
  if (known(hq) && known(hkv) && (hkv == 0 || hq % hkv != 0))
    return emitOpError() << "q's heads (" << hq << ") must be a multiple of k's (" << hkv << ")";
  if (Value mask = getMask()) {
    Type m = elementOf(mask);
    if (m != elementOf(getQ()) && !m.isInteger(1))
      return emitOpError() << "mask must be i1 or q's element type, got " << m;
    if (auto dims = dimsOf(mask); dims && dims->size() > 4)
      return emitOpError() << "mask must have rank <= 4, got " << mask.getType();
  }
  if (getCausal() != 0 && getCausal() != 1)
    return emitOpError() << "causal must be 0 or 1, got " << getCausal();
  float scale = getScale().convertToFloat();
  if (!std::isfinite(scale))
    return emitOpError() << "scale must be finite, got " << scale;
  return verifySoftCap(*this, getSoftcap());
}

LogicalResult AttentionOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape q = ctx.getShape(getQ());
  ctx.setResult(getOutput(), elementOf(getQ()), withLastDim(q, symDimOf(ctx, getV(), 3)));
  return success();
}

LogicalResult PagedAttentionOp::verify() {
  if (failed(expectKernelFloat(
          *this, {getQ(), getKNew(), getVNew(), getKCache(), getVCache(), getOutput()})))
    return failure();
  for (auto [v, what] : {std::pair<Value, StringRef>{getQ(), "q"},
                         {getKNew(), "k_new"},
                         {getVNew(), "v_new"},
                         {getKCache(), "k_cache"},
                         {getVCache(), "v_cache"},
                         {getOutput(), "the result"}})
    if (failed(expectRank(*this, v, 4, what)))
      return failure();
  for (auto [v, what] : {std::pair<Value, StringRef>{getSlots(), "slots"},
                         {getQueryStart(), "query_start"},
                         {getContextLens(), "context_lens"}})
    if (failed(expectRank(*this, v, 1, what)))
      return failure();
  if (getLayout() != "bhsd" && getLayout() != "bshd")
    return emitOpError() << "layout must be \"bhsd\" or \"bshd\", got \"" << getLayout() << "\"";
  // The head and token dims of q, k_new, v_new and the result.
  const int64_t headAxis = getLayout() == "bshd" ? 2 : 1, tokenAxis = 3 - headAxis;
  if (failed(expectRank(*this, getBlockTables(), 2, "block_tables")) ||
      failed(
          expectDimsEqual(*this, dimOf(getQ(), 3), dimOf(getKNew(), 3), "q's and k's head dims")) ||
      failed(expectDimsEqual(*this, dimOf(getKNew(), headAxis), dimOf(getKCache(), 1),
                             "k_new's and k_cache's heads")) ||
      failed(expectDimsEqual(*this, dimOf(getVNew(), headAxis), dimOf(getVCache(), 1),
                             "v_new's and v_cache's heads")) ||
      failed(expectDimsEqual(*this, dimOf(getKNew(), 3), dimOf(getKCache(), 3),
                             "k_new's and k_cache's head dims")) ||
      failed(expectDimsEqual(*this, dimOf(getVNew(), 3), dimOf(getVCache(), 3),
                             "v_new's and v_cache's head dims")) ||
      failed(expectDimsEqual(*this, dimOf(getQ(), tokenAxis), dimOf(getKNew(), tokenAxis),
                             "q's and k_new's tokens")) ||
      failed(expectDimsEqual(*this, dimOf(getQ(), tokenAxis), dimOf(getVNew(), tokenAxis),
                             "q's and v_new's tokens")))
    return failure();
  int64_t hq = dimOf(getQ(), headAxis), hkv = dimOf(getKNew(), headAxis);
  if (known(hq) && known(hkv) && (hkv == 0 || hq % hkv != 0))
    return emitOpError() << "q's heads (" << hq << ") must be a multiple of k's (" << hkv << ")";
  float scale = getScale().convertToFloat();
  if (!std::isfinite(scale))
    return emitOpError() << "scale must be finite, got " << scale;
  if (std::optional<uint64_t> w = getWindow(); w && static_cast<int64_t>(*w) <= 0)
    return emitOpError() << "window must be positive (absent for none), got "
                         << static_cast<int64_t>(*w);
  return verifySoftCap(*this, getSoftcap());
}

LogicalResult PagedAttentionOp::inferShapes(ShapeInferenceContext &ctx) {
  ctx.setResult(getOutput(), elementOf(getQ()),
                withLastDim(ctx.getShape(getQ()), symDimOf(ctx, getVNew(), 3)));
  return success();
}

} // namespace kiln
