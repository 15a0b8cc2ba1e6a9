//===- InjectAttention.cpp - scaled dot-product attention ----------------===//
//
// Rooted at the Softmax of
//
//   P = softmax(cap(scale_s * (q * scale_q) @ (k^T * scale_k)) + mask)
//       (any of the scales may be absent; Div by a constant counts as a
//       scale; cap(s) is the optional soft-cap c * tanh(s / c);
//       the mask is an Add of a float tensor, an Add of Where(b, 0, -inf),
//       or a Where(b, scores, -inf))
//   out = P @ v   (P possibly guarded by Where(IsNaN(P), 0, P))
//
// where k and v may be the GQA repeat Reshape(Expand(Unsqueeze(kv, 2))) of
// the cache, which is looked through so attention reads the Hkv heads
// directly, and k^T may be the dynamo exporter's Reshape / Transpose(0, 2, 1)
// / Reshape over [B*H, S, D]. The past-KV Concat stays: it produces the model's present
// outputs.
//
//===----------------------------------------------------------------------===//

#include "passes/InjectPatterns.h"
#include "passes/InjectUtils.h"

#include <cmath>

using namespace mlir;

namespace kiln::inject {
namespace {

bool isLastAxisAttr(int64_t axis, int64_t rank) { return axis == -1 || axis == rank - 1; }

/// The numpy broadcast of two ranked types' dims (`?` where unknown);
/// clears `ok` when static dims clash.
SmallVector<int64_t> broadcastStatic(Value a, Value b, bool &ok) {
  auto ta = cast<RankedTensorType>(a.getType()), tb = cast<RankedTensorType>(b.getType());
  int64_t rank = std::max(ta.getRank(), tb.getRank());
  SmallVector<int64_t> out(rank, ShapedType::kDynamic);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t ia = i - (rank - ta.getRank()), ib = i - (rank - tb.getRank());
    int64_t da = ia >= 0 ? ta.getDimSize(ia) : 1, db = ib >= 0 ? tb.getDimSize(ib) : 1;
    if (da == 1)
      out[i] = db;
    else if (db == 1)
      out[i] = da;
    else if (da == db)
      out[i] = da;
    else if (da != ShapedType::kDynamic && db != ShapedType::kDynamic)
      ok = false;
  }
  return out;
}

/// A fill that masks: -inf or a very negative finite value (finfo.min).
bool isMaskingFill(Value v) {
  std::optional<double> f = scalarConstant(v);
  return f && (*f == -INFINITY || *f <= -1e30);
}

/// Looks through the GQA repeat of a [B, Hkv, S, D] tensor:
/// Reshape(Expand(Unsqueeze(x, [2]), [B, Hkv, n, S, D]), [B, Hkv*n, S, D]).
Value skipRepeatKv(Value v) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  if (!reshape || rankOf(v) != 4)
    return v;
  auto expand = reshape.getData().getDefiningOp<ExpandOp>();
  if (!expand || rankOf(expand.getOutput()) != 5)
    return v;
  auto unsq = expand.getInput().getDefiningOp<UnsqueezeOp>();
  if (!unsq)
    return v;
  auto axes = getConstantIntValues(unsq.getAxes());
  if (!axes || axes->size() != 1 || (*axes)[0] != 2)
    return v;
  Value kv = unsq.getData();
  int64_t hkv = dimOf(kv, 1), hq = dimOf(v, 1), rep = dimOf(expand.getOutput(), 2);
  if (rankOf(kv) != 4 || hkv <= 0 || hq <= 0 || rep <= 0 || hkv * rep != hq ||
      dimOf(kv, 3) != dimOf(v, 3))
    return v;
  return kv;
}

/// Peels a multiplication by a scalar constant (or a division by one) off
/// `v`, multiplying it into `scale`.
Value peelScale(Value v, double &scale) {
  if (auto mul = v.getDefiningOp<MulOp>()) {
    for (Value side : {mul.getA(), mul.getB()})
      if (std::optional<double> c = scalarConstant(otherOperand(mul, side))) {
        scale *= *c;
        return side;
      }
  } else if (auto div = v.getDefiningOp<DivOp>()) {
    if (std::optional<double> c = scalarConstant(div.getB()); c && *c != 0.0) {
      scale /= *c;
      return div.getA();
    }
  }
  return v;
}

/// For soft-capped scores `cap * tanh(x / cap)` (Gemma 2's
/// attn_logit_softcapping; the division may be a multiplication by 1 / cap):
/// x, with `cap` set. Null for anything else, including a Tanh whose inner
/// and outer constants are not reciprocal.
Value uncap(Value v, double &cap) {
  double outer = 1.0, inner = 1.0;
  Value t = peelScale(v, outer);
  auto tanh = t != v ? t.getDefiningOp<TanhOp>() : nullptr;
  if (!tanh)
    return nullptr;
  Value x = peelScale(tanh.getX(), inner);
  if (x == tanh.getX() || !(outer > 0) || !std::isfinite(outer) ||
      std::abs(outer * inner - 1.0) > 1e-6)
    return nullptr;
  cap = outer;
  return x;
}

/// True when `v` is q @ k^T, scaled by constants and possibly soft-capped.
bool isScores(Value v) {
  double s = 1.0, cap = 0.0;
  if (Value x = uncap(v, cap))
    v = x;
  return static_cast<bool>(peelScale(v, s).getDefiningOp<MatMulOp>());
}

/// True when `v` is a Tanh under a scaling that uncap did not accept.
bool isOtherTanh(Value v) {
  double s = 1.0;
  return static_cast<bool>(peelScale(v, s).getDefiningOp<TanhOp>());
}

constexpr const char *kOtherCap =
    "the scores go through a Tanh that is not a soft-cap cap * tanh(scores / cap) with one "
    "constant cap";

/// The dynamo exporter's k^T: Reshape(Transpose(Reshape(k, [B*H, S, D]),
/// [0, 2, 1]), [B, H, D, S]); returns k when the symbolic shapes prove the
/// reshapes only merge and split B and H, else null.
Value unflattenedTranspose(Value kt, const ShapeInferenceContext &shapes) {
  auto outer = kt.getDefiningOp<ReshapeOp>();
  auto tr = outer ? outer.getData().getDefiningOp<TransposeOp>() : nullptr;
  auto inner = tr ? tr.getData().getDefiningOp<ReshapeOp>() : nullptr;
  if (!inner || tr.getPerm() != ArrayRef<int64_t>{0, 2, 1} || rankOf(kt) != 4)
    return nullptr;
  Value k = inner.getData();
  SymShape ks = shapes.getShape(k), is = shapes.getShape(inner.getReshaped()),
           os = shapes.getShape(kt);
  if (!ks.ranked || ks.getRank() != 4 || !is.ranked || is.getRank() != 3 || !os.ranked)
    return nullptr;
  bool same = is.dims[1] == ks.dims[2] && is.dims[2] == ks.dims[3] && os.dims[0] == ks.dims[0] &&
              os.dims[1] == ks.dims[1] && os.dims[2] == ks.dims[3] && os.dims[3] == ks.dims[2];
  return same ? k : nullptr;
}

struct AttentionPattern : OpRewritePattern<SoftmaxOp> {
  AttentionPattern(MLIRContext *ctx, const ShapeInferenceContext *shapes)
      : OpRewritePattern(ctx), shapes(shapes) {}
  const ShapeInferenceContext *shapes;

  LogicalResult matchAndRewrite(SoftmaxOp softmax, PatternRewriter &rewriter) const override {
    auto fail = [&](const Twine &why) {
      return rewriter.notifyMatchFailure(softmax, "attention: " + why);
    };
    Value probs = softmax.getOutput();
    if (rankOf(probs) != 4)
      return fail("the softmax input is not rank 4 [batch, heads, query, key]");
    if (!isLastAxisAttr(softmax.getAxis(), 4))
      return fail("the softmax is not over the key (last) dim");

    // Down: P (or its NaN guard) @ v.
    Value p = probs;
    for (Operation *u : probs.getUsers())
      if (auto where = dyn_cast<WhereOp>(u); where && where.getY() == probs &&
                                             where.getCondition().getDefiningOp<IsNaNOp>() &&
                                             scalarConstant(where.getX()) == 0.0)
        p = where.getOutput();
    auto pv = dyn_cast_or_null<MatMulOp>(soleUser(p));
    if (!pv || pv.getA() != p)
      return fail("the probabilities do not multiply v (P @ v)");
    if (p != probs &&
        !llvm::all_of(probs.getUsers(), [&](Operation *u) { return isa<IsNaNOp, WhereOp>(u); }))
      return fail("the probabilities have other users");

    // Up: mask, scales, q @ k^T.
    Value scores = softmax.getInput(), mask;
    if (auto add = scores.getDefiningOp<AddOp>()) {
      for (Value side : {add.getA(), add.getB()}) {
        if (isScores(side)) {
          mask = otherOperand(add, side);
          scores = side;
          break;
        }
      }
      // where(b, scores, -inf) + m (GPT-2's eager attention): both masks
      // become one, where(b, m, -inf), added to the scores.
      if (!mask)
        for (Value side : {add.getA(), add.getB()}) {
          auto where = side.getDefiningOp<WhereOp>();
          if (!where || !isMaskingFill(where.getY()) || !isScores(where.getX()))
            continue;
          Value m = otherOperand(add, side);
          Type mt = cast<TensorType>(m.getType()).getElementType();
          if (mt != cast<TensorType>(where.getX().getType()).getElementType() || rankOf(m) < 0 ||
              rankOf(where.getCondition()) < 0)
            continue;
          bool maskOk = true;
          auto both = broadcastStatic(where.getCondition(), m, maskOk);
          if (!maskOk)
            continue;
          rewriter.setInsertionPoint(add);
          auto scalarType = RankedTensorType::get({}, mt);
          Value negInf = rewriter.create<ConstantOp>(
              where.getLoc(), scalarType,
              DenseElementsAttr::get(scalarType, rewriter.getFloatAttr(mt, -INFINITY)),
              StringAttr());
          mask = rewriter.create<WhereOp>(where.getLoc(), RankedTensorType::get(both, mt),
                                          where.getCondition(), m, negInf);
          scores = where.getX();
          break;
        }
      if (!mask && (isOtherTanh(add.getA()) || isOtherTanh(add.getB())))
        return fail(kOtherCap);
      if (!mask)
        return fail("the masked scores are not an Add of a mask to q @ k^T");
      if (auto where = mask.getDefiningOp<WhereOp>();
          where && scalarConstant(where.getX()) == 0.0 && isMaskingFill(where.getY()))
        mask = where.getCondition();
    } else if (auto where = scores.getDefiningOp<WhereOp>()) {
      if (!isMaskingFill(where.getY()))
        return fail("the Where mask does not fill with -inf");
      mask = where.getCondition();
      scores = where.getX();
    }
    double cap = 0.0;
    if (Value x = uncap(scores, cap))
      scores = x;
    double scale = 1.0;
    scores = peelScale(scores, scale);
    auto qk = scores.getDefiningOp<MatMulOp>();
    if (!qk && isOtherTanh(scores))
      return fail(kOtherCap);
    if (!qk)
      return fail("the scores are not q @ k^T scaled by a scalar constant");
    Value q = peelScale(qk.getA(), scale), kt = peelScale(qk.getB(), scale);
    // k as [B, H, S, D]: k^T is its [0, 1, 3, 2] transpose, or the
    // [0, 2, 3, 1] transpose of [B, S, H, D] (rebuilt below as [0, 2, 1, 3]).
    Value k, kBshd;
    if (auto tr = kt.getDefiningOp<TransposeOp>()) {
      ArrayRef<int64_t> perm = tr.getPerm();
      if (perm == ArrayRef<int64_t>{0, 1, 3, 2})
        k = tr.getData();
      else if (perm == ArrayRef<int64_t>{0, 2, 3, 1} && rankOf(tr.getData()) == 4)
        kBshd = tr.getData();
    }
    if (!k && !kBshd)
      k = unflattenedTranspose(kt, *shapes);
    if (!k && !kBshd)
      return fail("k is not transposed with perm [0, 1, 3, 2] or [0, 2, 3, 1] before q @ k^T");
    if (k)
      k = skipRepeatKv(k);
    Value v = skipRepeatKv(pv.getB());
    Value kAny = k ? k : kBshd;
    int64_t hkv = k ? dimOf(k, 1) : dimOf(kBshd, 2), hq = dimOf(q, 1);
    if (rankOf(q) != 4 || rankOf(kAny) != 4 || rankOf(v) != 4)
      return fail("q, k or v is not rank 4");
    if (hq > 0 && hkv > 0 && hq % hkv != 0)
      return fail("q's heads are not a multiple of k's");
    if (hkv != dimOf(v, 1))
      return fail("k and v have different head counts");
    Type et = cast<TensorType>(q.getType()).getElementType();
    if (!(et.isF32() || et.isF16() || et.isBF16()) ||
        cast<TensorType>(kAny.getType()).getElementType() != et ||
        cast<TensorType>(v.getType()).getElementType() != et)
      return fail("q, k and v are not all f32, f16 or bf16");
    if (mask) {
      Type mt = cast<TensorType>(mask.getType()).getElementType();
      if (rankOf(mask) < 0 || rankOf(mask) > 4 || (mt != et && !mt.isInteger(1)))
        return fail("the mask is not a rank <= 4 tensor of q's type or i1");
    }
    if (!std::isfinite(scale) || scale == 0.0)
      return fail("the combined scale is not a finite non-zero constant");
    if (cap != 0.0 && !std::isfinite(static_cast<float>(cap)))
      return fail("the soft-cap is not a finite f32");
    rewriter.setInsertionPoint(pv);
    if (!k) {
      auto t = cast<RankedTensorType>(kBshd.getType());
      k = rewriter.create<TransposeOp>(
          kt.getLoc(),
          t.clone({t.getDimSize(0), t.getDimSize(2), t.getDimSize(1), t.getDimSize(3)}), kBshd,
          rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}));
    }
    rewriter.replaceOpWithNewOp<AttentionOp>(
        pv, pv.getY().getType(), q, k, v, mask, rewriter.getF32FloatAttr(static_cast<float>(scale)),
        rewriter.getI64IntegerAttr(0),
        cap != 0.0 ? rewriter.getF32FloatAttr(static_cast<float>(cap)) : FloatAttr());
    return success();
  }
};

} // namespace

void populateAttentionPatterns(RewritePatternSet &patterns, const ShapeInferenceContext *shapes) {
  patterns.add<AttentionPattern>(patterns.getContext(), shapes);
}

} // namespace kiln::inject
