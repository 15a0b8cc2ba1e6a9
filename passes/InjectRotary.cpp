//===- InjectRotary.cpp - rotary position embedding -----------------------===//
//
//   x * cos + concat(-x[..., R/2:], x[..., :R/2]) * sin         -> rotary(x)
//   concat(rotary(x[..., :R]), x[..., R:])                      -> rotary(x) {rotary_dim = R}
//
// Rooted at the Add (and at the Concat for partial rotary). cos and sin are
// kept as the graph computes them, so the base, scaling and position ids
// are the model's own.
//
//===----------------------------------------------------------------------===//

#include "passes/InjectPatterns.h"
#include "passes/InjectUtils.h"

#include <limits>

using namespace mlir;

namespace kiln::inject {
namespace {

/// A step-1 Slice of the last dim with constant bounds: its source and the
/// [start, end) it takes, clamped to the source's static last dim.
struct LastDimSlice {
  Value source;
  int64_t start = 0, end = 0;
};

std::optional<LastDimSlice> lastDimSlice(Value v) {
  auto slice = v.getDefiningOp<SliceOp>();
  if (!slice)
    return std::nullopt;
  int64_t rank = rankOf(slice.getData()), d = dimOf(slice.getData(), -1);
  if (rank < 1 || d < 0)
    return std::nullopt;
  if (slice.getAxes() ? !isLastAxis(slice.getAxes(), rank) : rank != 1)
    return std::nullopt;
  if (slice.getSteps())
    if (auto steps = getConstantIntValues(slice.getSteps());
        !steps || steps->size() != 1 || (*steps)[0] != 1)
      return std::nullopt;
  auto starts = getConstantIntValues(slice.getStarts());
  auto ends = getConstantIntValues(slice.getEnds());
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1)
    return std::nullopt;
  auto clamp = [&](int64_t i) { return std::clamp(i < 0 ? i + d : i, int64_t(0), d); };
  return LastDimSlice{slice.getData(), clamp((*starts)[0]), clamp((*ends)[0])};
}

/// concat(-x[h:R], x[0:h]) along the last dim: returns x and R.
std::optional<std::pair<Value, int64_t>> rotateHalf(Value v) {
  auto concat = v.getDefiningOp<ConcatOp>();
  if (!concat || concat.getInputs().size() != 2)
    return std::nullopt;
  int64_t rank = rankOf(v);
  if (concat.getAxis() != -1 && concat.getAxis() != rank - 1)
    return std::nullopt;
  auto neg = concat.getInputs()[0].getDefiningOp<NegOp>();
  if (!neg)
    return std::nullopt;
  auto hi = lastDimSlice(neg.getX()), lo = lastDimSlice(concat.getInputs()[1]);
  if (!hi || !lo || hi->source != lo->source || lo->start != 0 || hi->start != lo->end)
    return std::nullopt;
  int64_t r = hi->end;
  if (r != 2 * lo->end || r != dimOf(hi->source, -1))
    return std::nullopt;
  return std::make_pair(hi->source, r);
}

/// cos/sin must have x's rank, the rotary width last, and dims 1 or x's.
bool broadcastsOver(Value table, Value x, int64_t r) {
  if (rankOf(table) != rankOf(x) || dimOf(table, -1) != r)
    return false;
  for (int64_t i = 0; i + 1 < rankOf(x); ++i) {
    int64_t t = dimOf(table, i), d = dimOf(x, i);
    if (t != 1 && t != -1 && d != -1 && t != d)
      return false;
  }
  return true;
}

struct RotateHalf : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    auto m0 = add.getA().getDefiningOp<MulOp>(), m1 = add.getB().getDefiningOp<MulOp>();
    if (!m0 || !m1)
      return failure();
    for (auto [cosMul, sinMul] : {std::make_pair(m0, m1), std::make_pair(m1, m0)}) {
      for (Value rotSide : {sinMul.getA(), sinMul.getB()}) {
        auto rot = rotateHalf(rotSide);
        if (!rot)
          continue;
        auto [x, r] = *rot;
        Value sin = otherOperand(sinMul, rotSide), cos = otherOperand(cosMul, x);
        if (!cos)
          return rewriter.notifyMatchFailure(add, "rotary: x * cos does not use the rotated x");
        if (cos.getType() != sin.getType() || !broadcastsOver(cos, x, r))
          return rewriter.notifyMatchFailure(
              add, "rotary: cos/sin do not broadcast over x with the rotary width last");
        if (add.getC().getType() != x.getType())
          return rewriter.notifyMatchFailure(add, "rotary: the result's type is not x's");
        if (!isKernelFloat(x))
          return rewriter.notifyMatchFailure(add, "rotary: not f32, f16 or bf16");
        rewriter.replaceOpWithNewOp<RotaryOp>(add, x.getType(), x, cos, sin,
                                              rewriter.getI64IntegerAttr(r),
                                              rewriter.getI64IntegerAttr(0));
        return success();
      }
    }
    return failure();
  }
};

/// concat(rotary(x[..., :R]), x[..., R:]) -> rotary(x) with rotary_dim R.
struct PartialRotary : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp concat, PatternRewriter &rewriter) const override {
    if (concat.getInputs().size() != 2)
      return failure();
    auto rotary = concat.getInputs()[0].getDefiningOp<RotaryOp>();
    if (!rotary)
      return failure();
    int64_t rank = rankOf(concat.getResult());
    if (concat.getAxis() != -1 && concat.getAxis() != rank - 1)
      return rewriter.notifyMatchFailure(concat, "partial rotary: not a last-dim concat");
    auto head = lastDimSlice(rotary.getX()), tail = lastDimSlice(concat.getInputs()[1]);
    if (!head || !tail || head->source != tail->source || head->start != 0 ||
        tail->start != head->end || tail->end != dimOf(head->source, -1))
      return rewriter.notifyMatchFailure(concat, "partial rotary: the pass-through part is not "
                                                 "the rest of the rotated tensor");
    Value x = head->source;
    if (concat.getResult().getType() != x.getType() ||
        !broadcastsOver(rotary.getCos(), x, rotary.getRotaryDim()))
      return rewriter.notifyMatchFailure(concat, "partial rotary: shapes do not line up");
    rewriter.replaceOpWithNewOp<RotaryOp>(concat, x.getType(), x, rotary.getCos(), rotary.getSin(),
                                          rotary.getRotaryDimAttr(), rotary.getInterleavedAttr());
    return success();
  }
};

} // namespace

void populateRotaryPatterns(RewritePatternSet &patterns) {
  patterns.add<RotateHalf, PartialRotary>(patterns.getContext());
}

} // namespace kiln::inject
