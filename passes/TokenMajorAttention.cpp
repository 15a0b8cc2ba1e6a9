//===- TokenMajorAttention.cpp - paged attention on token-major q/k/v ----===//
//
// kiln-token-major-attention: the projections of a ragged plan write q, k
// and v token-major, [1, T, H, D]; the model transposes them to [1, H, T, D]
// for attention and the result back before o_proj:
//
//   q = rotary(transpose(xq, [0, 2, 1, 3]), cos, sin)     (rotary optional)
//   k = rotary(transpose(xk, [0, 2, 1, 3]), cos, sin)     (rotary optional)
//   v = transpose(xv, [0, 2, 1, 3])
//   y = transpose(paged_attention(q, k, v, ...), [0, 2, 1, 3])
//
// becomes
//
//   q' = rotary(xq, cos', sin'), k' = rotary(xk, cos', sin')
//   y  = paged_attention(q', k', xv, ...) {layout = "bshd"}
//
// Rotary is elementwise over x's leading dims with cos/sin broadcast, so it
// commutes with the transpose once cos/sin are transposed too: their head
// dim is 1, so that transpose is a reshape ([c0, 1, c2, R] -> [c0, c2, 1,
// R]), a view the memory plan makes free. An attention whose q, k, v or
// result is read by anything else, whose transposes swap other dims, or
// whose cos/sin have a head dim other than 1 is left as it is.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"
#include "compiler/plan/PlanAttrs.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {

#define GEN_PASS_DEF_KILNTOKENMAJORATTENTION
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

constexpr int64_t kSwap[] = {0, 2, 1, 3};

int64_t rankOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t ? t.getRank() : -1;
}

/// The transpose swapping dims 1 and 2 of a rank-4 tensor that makes `v`,
/// when `v` has no other reader; else null.
TransposeOp swapOf(Value v) {
  auto tr = v.getDefiningOp<TransposeOp>();
  if (!tr || tr.getPerm() != ArrayRef<int64_t>(kSwap) || rankOf(tr.getData()) != 4 ||
      !v.hasOneUse())
    return nullptr;
  return tr;
}

/// How q or k reaches the attention: transpose(x), or rotary(transpose(x)).
struct Operand {
  TransposeOp transpose;
  RotaryOp rotary; // null without rotary
};

std::optional<Operand> matchOperand(Value v, bool allowRotary) {
  if (TransposeOp tr = swapOf(v))
    return Operand{tr, nullptr};
  auto rotary = v.getDefiningOp<RotaryOp>();
  if (!allowRotary || !rotary || !v.hasOneUse())
    return std::nullopt;
  TransposeOp tr = swapOf(rotary.getX());
  if (!tr)
    return std::nullopt;
  // cos/sin [c0, 1, c2, R]: the head dim broadcasts, so their token-major
  // form is a reshape.
  for (Value table : {rotary.getCos(), rotary.getSin()}) {
    auto t = dyn_cast<RankedTensorType>(table.getType());
    if (!t || t.getRank() != 4 || t.getDimSize(1) != 1 ||
        t.getDimSize(3) != static_cast<int64_t>(rotary.getRotaryDim()))
      return std::nullopt;
  }
  return Operand{tr, rotary};
}

struct TokenMajorAttentionPass : impl::KilnTokenMajorAttentionBase<TokenMajorAttentionPass> {
  void runOnOperation() override {
    tables.clear();
    SmallVector<PagedAttentionOp> ops;
    getOperation().walk([&](PagedAttentionOp op) {
      if (op.getLayout() == "bhsd")
        ops.push_back(op);
    });
    for (PagedAttentionOp op : ops)
      rewrite(op);
  }

  /// The token-major (cos, sin) made for each (cos, sin), shared by every
  /// attention that rotates with them (they come before the first one).
  DenseMap<std::pair<Value, Value>, std::pair<Value, Value>> tables;

  /// cos or sin [c0, 1, c2, R] as [c0, c2, 1, R]: Reshape(table, [0, -1, 1, R]).
  /// Named after the table's op (plan names stay unique and readable).
  Value tokenMajorTable(OpBuilder &b, Value table) {
    auto t = cast<RankedTensorType>(table.getType());
    int64_t r = t.getDimSize(3);
    std::string name = plan::nodeName(table.getLoc());
    name = name.empty() ? "rotary_table.token_major" : name + ".token_major";
    Location loc = NameLoc::get(b.getStringAttr(name), table.getLoc());
    auto shapeType = RankedTensorType::get({4}, b.getI64Type());
    Value shape = b.create<ConstantOp>(
        loc, shapeType, DenseElementsAttr::get(shapeType, ArrayRef<int64_t>{0, -1, 1, r}),
        b.getStringAttr(name + ".shape"));
    return b.create<ReshapeOp>(loc, t.clone({t.getDimSize(0), t.getDimSize(2), 1, r}), table, shape,
                               b.getI64IntegerAttr(0));
  }

  /// q or k straight from the projection's [1, T, H, D], rotated there.
  Value tokenMajor(OpBuilder &b, Operand o) {
    Value x = o.transpose.getData();
    if (!o.rotary)
      return x;
    auto key = std::make_pair(o.rotary.getCos(), o.rotary.getSin());
    auto it = tables.find(key);
    if (it == tables.end()) {
      Value cos = tokenMajorTable(b, o.rotary.getCos());
      Value sin = tokenMajorTable(b, o.rotary.getSin());
      it = tables.try_emplace(key, cos, sin).first;
    }
    return b.create<RotaryOp>(o.rotary.getLoc(), x.getType(), x, it->second.first,
                              it->second.second, o.rotary.getRotaryDimAttr(),
                              o.rotary.getInterleavedAttr());
  }

  void rewrite(PagedAttentionOp op) {
    std::optional<Operand> q = matchOperand(op.getQ(), true), k = matchOperand(op.getKNew(), true),
                           v = matchOperand(op.getVNew(), false);
    if (!q || !k || !v || !op.getOutput().hasOneUse())
      return;
    auto back = dyn_cast<TransposeOp>(*op.getOutput().getUsers().begin());
    if (!back || back.getPerm() != ArrayRef<int64_t>(kSwap))
      return;

    OpBuilder b(op);
    Value qx = tokenMajor(b, *q), kx = tokenMajor(b, *k);
    auto paged = b.create<PagedAttentionOp>(
        op.getLoc(), back.getTransposed().getType(), qx, kx, v->transpose.getData(), op.getKCache(),
        op.getVCache(), op.getSlots(), op.getQueryStart(), op.getContextLens(), op.getBlockTables(),
        op.getScaleAttr(), b.getStringAttr("bshd"), op.getSoftcapAttr(), op.getWindowAttr());
    back.getTransposed().replaceAllUsesWith(paged.getOutput());
    back.erase();
    op.erase();
    for (Operand o : {*q, *k, *v}) {
      if (o.rotary)
        o.rotary.erase();
      o.transpose.erase();
    }
  }
};

} // namespace
} // namespace kiln
