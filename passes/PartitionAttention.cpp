//===- PartitionAttention.cpp - kiln-partition's attention heads ---------===//
//
// One attention layer split by heads: how the ranks share the heads,
// matching the projection (three linears, or one split or sliced into q, k,
// v) -> reshape -> [rms_norm per head] -> [transpose] -> [rotary] ->
// paged_attention -> o_proj
// chains, and rewriting them to rank r's heads (or to nothing, for a rank
// with no heads). The shape helpers are in PartitionShapes.cpp.
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioner.h"

namespace kiln::partition {

/// The query-head split of planHeads, or the rank whose heads read their
/// KV heads in unequal groups (then `plan` is incomplete).
static std::optional<int64_t> splitQueryHeads(int64_t hq, int64_t group, int64_t ranks,
                                              HeadPlan &plan) {
  for (int64_t r = 0; r < ranks; ++r) {
    Range q = rankRange(hq, ranks, r), kv;
    if (q.count > 0) {
      kv.first = q.first / group;
      kv.count = (q.first + q.count - 1) / group + 1 - kv.first;
      bool uniform = q.count % kv.count == 0;
      for (int64_t i = 0; uniform && i < q.count; ++i)
        uniform = (q.first + i) / group - kv.first == i / (q.count / kv.count);
      if (!uniform)
        return r;
    }
    plan.q.push_back(q);
    plan.kv.push_back(kv);
  }
  return std::nullopt;
}

FailureOr<HeadPlan> planHeads(int64_t hq, int64_t hkv, int64_t ranks, std::string &why) {
  if (hkv <= 0 || hq % hkv != 0) {
    why = "query heads (" + std::to_string(hq) + ") are not a multiple of KV heads (" +
          std::to_string(hkv) + ")";
    return failure();
  }
  const int64_t group = hq / hkv;
  HeadPlan plan;
  std::optional<int64_t> bad = splitQueryHeads(hq, group, ranks, plan);
  if (!bad)
    return plan;
  // 8 query heads, 4 KV heads, 3 ranks: [3, 3, 2] query heads would give
  // rank 0 KV head 0 twice and KV head 1 once. Split the KV heads [2, 1, 1]
  // and give each rank their query heads [4, 2, 2] (DeepSpeed's AutoTP
  // does the same when it knows num_key_value_heads).
  if (hkv >= ranks) {
    plan = HeadPlan();
    for (int64_t r = 0; r < ranks; ++r) {
      Range kv = rankRange(hkv, ranks, r);
      plan.kv.push_back(kv);
      plan.q.push_back({kv.first * group, kv.count * group});
    }
    return plan;
  }
  const Range q = rankRange(hq, ranks, *bad);
  why = "rank " + std::to_string(*bad) + "'s query heads [" + std::to_string(q.first) + ", " +
        std::to_string(q.first + q.count) + ") read their KV heads in unequal groups, and " +
        "there are too few KV heads to split whole groups instead (" + std::to_string(hq) +
        " query heads, " + std::to_string(hkv) + " KV heads, " + std::to_string(ranks) + " ranks)";
  return failure();
}

llvm::json::Array counts(const std::vector<Range> &ranges) {
  llvm::json::Array a;
  for (const Range &r : ranges)
    a.push_back(r.count);
  return a;
}

/// "kiln.add (/model/layers.0/Add)": an op for a message, with its node
/// when it has one.
static std::string describe(Operation *op) {
  std::string name = op->getName().getStringRef().str(), node = nodeOf(op);
  return node == name ? name : name + " (" + node + ")";
}

namespace {

/// Walks from `v` back to the value a projection made, through single-use
/// rotary, per-head rms_norm, transpose ([0, 2, 1, 3]) and reshape ops; the
/// last op recorded is the reshape that splits the projection's columns into
/// heads.
Value traceToProjection(Value v, SmallVector<Operation *> &ops, std::string &why) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<SplitOp, LinearOp>(def) ||
        (isa<SliceOp>(def) && cast<SliceOp>(def).getData().getDefiningOp<LinearOp>())) {
      if (ops.empty() || !isa<ReshapeOp>(ops.back())) {
        why = "the projection's output is not only reshaped into heads";
        return nullptr;
      }
      // GPT-2's export reads the batch and sequence dims of q, k, v to
      // build their reshape targets: a read of any dim but the columns.
      if (Operation *other = readerBesides(v, {ops.back()}, -1)) {
        why = "the projection's output (" + nodeOf(def) +
              ") is not only reshaped into heads: " + describe(other) + " reads it too";
        return nullptr;
      }
      return v;
    }
    if (!v.hasOneUse()) {
      why = "an intermediate of q/k/v (" + nodeOf(def) + ") has another reader";
      return nullptr;
    }
    // Qwen3's per-head q and k norms: an rms_norm over the head dim (after
    // the reshape into heads) with one [D] scale for every head is the same
    // on any subset of the heads.
    if (auto norm = dyn_cast<RmsNormOp>(def)) {
      auto scale = dyn_cast<RankedTensorType>(norm.getScale().getType());
      auto x = dyn_cast<RankedTensorType>(norm.getX().getType());
      if (!scale || !x || x.getRank() != 4 || scale.getRank() != 1 || scale.isDynamicDim(0) ||
          scale.getDimSize(0) != x.getDimSize(3)) {
        why = "q/k/v passes through an rms_norm that is not one per head (" + nodeOf(def) + ")";
        return nullptr;
      }
      ops.push_back(def);
      v = norm.getX();
      continue;
    }
    if (!ops.empty() && isa<ReshapeOp>(ops.back())) {
      why = "q/k/v passes through more than one reshape";
      return nullptr;
    }
    ops.push_back(def);
    if (auto rot = dyn_cast<RotaryOp>(def))
      v = rot.getX();
    else if (auto t = dyn_cast<TransposeOp>(def);
             t && t.getPerm() == ArrayRef<int64_t>({0, 2, 1, 3}))
      v = t.getData();
    else if (auto r = dyn_cast<ReshapeOp>(def))
      v = r.getData();
    else {
      why = "q/k/v comes from " + def->getName().getStringRef().str() + ", not a projection";
      return nullptr;
    }
  }
  why = "q/k/v is a graph input";
  return nullptr;
}

/// The head axis of each op result in `ops` (from pa back), given the head
/// axis of pa's operand; transposes move it.
SmallVector<int64_t> headAxes(ArrayRef<Operation *> ops, int64_t axis) {
  SmallVector<int64_t> axes;
  for (Operation *op : ops) {
    axes.push_back(axis);
    if (auto t = dyn_cast<TransposeOp>(op))
      axis = t.getPerm()[axis];
  }
  return axes;
}

} // namespace

/// The columns [first, first + count) that `slice` takes from its data's
/// last dim (ONNX clamps the bounds to the dim, so phi3's INT64_MAX end
/// means "to the end"), or nullopt when it is not one static range of them
/// with step 1.
static std::optional<Range> sliceColumns(SliceOp slice) {
  auto starts = constInts(slice.getStarts());
  auto ends = constInts(slice.getEnds());
  auto axes = slice.getAxes() ? constInts(slice.getAxes()) : std::nullopt;
  auto steps = slice.getSteps() ? constInts(slice.getSteps())
                                : std::optional<SmallVector<int64_t>>(SmallVector<int64_t>{1});
  const int64_t rank = cast<RankedTensorType>(slice.getData().getType()).getRank();
  const int64_t width = dim(slice.getData(), -1);
  if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1 ||
      axes->size() != 1 || steps->size() != 1 || (*steps)[0] != 1 || ShapedType::isDynamic(width) ||
      ((*axes)[0] != -1 && (*axes)[0] != rank - 1))
    return std::nullopt;
  auto clamp = [width](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + width : i, 0, width); };
  const int64_t first = clamp((*starts)[0]), end = clamp((*ends)[0]);
  return Range{first, std::max<int64_t>(end - first, 0)};
}

static const char *const kQkv[3] = {"q", "k", "v"};

/// A fused QKV projection and a split of its columns into q, k, v.
static LogicalResult matchSplit(Attention &a, SplitOp split, std::string &why) {
  a.parts.push_back(split);
  a.fused = split.getInput().getDefiningOp<LinearOp>();
  bool ordered = split.getNumResults() == 3 && a.source[0] == split.getResult(0) &&
                 a.source[1] == split.getResult(1) && a.source[2] == split.getResult(2);
  int64_t sa = split.getAxis();
  int64_t last = cast<RankedTensorType>(split.getInput().getType()).getRank() - 1;
  if (!a.fused || !ordered || (sa != -1 && sa != last)) {
    why = "the split is not q, k, v of one fused projection along its columns";
    return failure();
  }
  const int64_t widths[3] = {a.hq * a.d, a.hkv * a.d, a.hkv * a.d};
  for (int i = 0; i < 3; ++i)
    if (dim(split.getResult(i), -1) != widths[i]) {
      why = std::string("the split's ") + kQkv[i] + " is not " + std::to_string(widths[i]) +
            " columns wide";
      return failure();
    }
  if (Operation *other = readerBesides(a.fused.getY(), {split}, -1)) {
    why = "the fused projection has a reader besides the split: " + describe(other);
    return failure();
  }
  return success();
}

/// Phi-3: one qkv_proj, then q, k, v as three consecutive column slices of
/// it, in that order.
static LogicalResult matchSlices(Attention &a, std::string &why) {
  const int64_t widths[3] = {a.hq * a.d, a.hkv * a.d, a.hkv * a.d};
  int64_t start = 0;
  for (int i = 0; i < 3; ++i) {
    auto slice = a.source[i].getDefiningOp<SliceOp>();
    LinearOp from = slice ? slice.getData().getDefiningOp<LinearOp>() : LinearOp();
    if (!from || (a.fused && from != a.fused)) {
      why = "q, k, v are not consecutive column slices of one fused projection: " +
            std::string(kQkv[i]) + " is not a slice of the projection q is";
      return failure();
    }
    a.fused = from;
    a.parts.push_back(slice);
    std::optional<Range> cols = sliceColumns(slice);
    if (!cols || cols->first != start || cols->count != widths[i]) {
      why = "q, k, v are not consecutive column slices of one fused projection: " +
            std::string(kQkv[i]) + " (" + nodeOf(slice) + ") should take columns [" +
            std::to_string(start) + ", " + std::to_string(start + widths[i]) + ") with step 1";
      if (cols)
        why += ", not [" + std::to_string(cols->first) + ", " +
               std::to_string(cols->first + cols->count) + ")";
      return failure();
    }
    start += widths[i];
  }
  if (Operation *other = readerBesides(a.fused.getY(), a.parts, -1)) {
    why = "the fused projection has a reader besides the q, k, v slices: " + describe(other);
    return failure();
  }
  return success();
}

/// Whether `reshape`'s target ends in `width` (or -1, inferred).
static bool endsIn(ReshapeOp reshape, int64_t width) {
  int64_t n = shapeLength(reshape.getShape());
  auto slot = n > 0 ? shapeSlot(reshape.getShape(), n - 1) : std::nullopt;
  int64_t last = slot ? slot->values[slot->at] : 0;
  return slot && (last == width || last == -1);
}

/// Whether `reshape` merges the last two dims of its input, [.., H, D] with
/// the heads at `headAxis`, into [.., H D].
static bool mergesHeads(ReshapeOp reshape, int64_t headAxis, int64_t width) {
  return headAxis == cast<RankedTensorType>(reshape.getData().getType()).getRank() - 2 &&
         endsIn(reshape, width);
}

/// pa -> [transpose] -> reshape [.., Hq D] -> o_proj. Besides that chain,
/// its values may be read by kiln.shape for their other dims, and pa's
/// result (or its transpose) merged into [.., Hq D] by a reshape read only
/// that way: GPT-2's export builds the reshape of o_proj's output back to
/// [batch, seq, hidden] from them.
static LogicalResult matchOutput(Attention &a, int64_t axis, std::string &why) {
  const int64_t width = a.hq * a.d;
  Value v = a.pa.getOutput();
  int64_t headAxis = axis; // v's head axis, until the heads are merged
  bool merged = false;
  while (true) {
    const int64_t readAxis = merged ? -1 : headAxis;
    Operation *next = nullptr;
    for (Operation *user : v.getUsers()) {
      if (auto s = dyn_cast<ShapeOp>(user); s && readsDimsBesides(s, readAxis)) {
        a.outShapeRead = true;
        continue;
      }
      auto r = dyn_cast<ReshapeOp>(user);
      if (r && r.getData() == v && !merged && mergesHeads(r, headAxis, width) &&
          !r->getResult(0).use_empty() && !readerBesides(r->getResult(0), {}, -1)) {
        a.sideMerges.push_back(r);
        a.outShapeRead = true;
        continue;
      }
      if (next) {
        why = "attention's output has more than one reader: " + describe(next) + " and " +
              describe(user);
        return failure();
      }
      next = user;
    }
    if (!next) {
      why = "attention's output does not reach a linear";
      return failure();
    }
    if (auto o = dyn_cast<LinearOp>(next); o && o.getX() == v) {
      a.o = o;
      return success();
    }
    bool isT = isa<TransposeOp>(next) && a.out.empty();
    auto reshape = dyn_cast<ReshapeOp>(next);
    if (!isT && !(reshape && reshape.getData() == v)) {
      why = "attention's output goes to " + next->getName().getStringRef().str() +
            ", not a reshape and o_proj";
      return failure();
    }
    if (reshape && !(merged ? endsIn(reshape, width) : mergesHeads(reshape, headAxis, width))) {
      why = "the reshape after attention does not merge the heads and head size into Hq * D";
      return failure();
    }
    if (auto t = dyn_cast<TransposeOp>(next)) {
      // The result's dim i is the operand's dim perm[i].
      ArrayRef<int64_t> perm = t.getPerm();
      headAxis = std::find(perm.begin(), perm.end(), headAxis) - perm.begin();
    }
    merged |= reshape != nullptr;
    a.out.push_back(next);
    v = next->getResult(0);
  }
}

LogicalResult Partitioner::matchAttention(PagedAttentionOp pa, Attention &a, std::string &why) {
  a.pa = pa;
  const int64_t axis = pa.getLayout() == "bshd" ? 2 : 1;
  a.hq = dim(pa.getQ(), axis);
  a.hkv = dim(pa.getKNew(), axis);
  a.d = dim(pa.getQ(), -1);
  if (ShapedType::isDynamic(a.hq) || ShapedType::isDynamic(a.hkv) || ShapedType::isDynamic(a.d) ||
      dim(pa.getVNew(), -1) != a.d) {
    why = "head counts or head size are not static (or v's head size differs)";
    return failure();
  }
  Value operands[3] = {pa.getQ(), pa.getKNew(), pa.getVNew()};
  for (int i = 0; i < 3; ++i)
    if (!(a.source[i] = traceToProjection(operands[i], a.in[i], why)))
      return failure();
  // The reshapes must name the head count, so the rank's can replace it.
  for (int i = 0; i < 3; ++i) {
    auto reshape = cast<ReshapeOp>(a.in[i].back());
    int64_t ha = headAxes(a.in[i], axis).back();
    auto slot = shapeSlot(reshape.getShape(), ha);
    // The head count, or -1 (inferred from the projection's width, so the
    // rank's narrower projection gives its own count).
    int64_t heads = slot ? slot->values[slot->at] : 0;
    if (shapeLength(reshape.getShape()) != 4 || !slot ||
        (heads != (i == 0 ? a.hq : a.hkv) && heads != -1)) {
      why = "the reshape into heads (" + nodeOf(reshape) + ") does not name the head count";
      return failure();
    }
  }
  if (auto split = a.source[0].getDefiningOp<SplitOp>()) {
    if (failed(matchSplit(a, split, why)))
      return failure();
  } else if (a.source[0].getDefiningOp<SliceOp>()) {
    if (failed(matchSlices(a, why)))
      return failure();
  }
  if (a.fused) {
    if (!isStaticWeight(a.fused.getW(), 2) || dim(a.fused.getW(), 1) != (a.hq + 2 * a.hkv) * a.d) {
      why = "the fused QKV weight is not a [K, (Hq + 2 Hkv) D] constant";
      return failure();
    }
  } else {
    for (int i = 0; i < 3; ++i) {
      a.proj[i] = a.source[i].getDefiningOp<LinearOp>();
      int64_t heads = i == 0 ? a.hq : a.hkv;
      if (!a.proj[i] || !isStaticWeight(a.proj[i].getW(), 2) ||
          dim(a.proj[i].getW(), 1) != heads * a.d) {
        why = "q/k/v do not come from linears with [K, H D] constant weights";
        return failure();
      }
    }
  }
  for (Value cache : {pa.getKCache(), pa.getVCache()})
    if (!isa<BlockArgument>(cache) || !cache.hasOneUse() || dim(cache, 1) != a.hkv) {
      why = "the KV cache is not a graph input [blocks, Hkv, block_size, D] read only here";
      return failure();
    }
  if (failed(matchOutput(a, axis, why)))
    return failure();
  if (a.out.empty() || !isa<ReshapeOp>(a.out.back()) || !isStaticWeight(a.o.getW(), 2) ||
      dim(a.o.getW(), 0) != a.hq * a.d || a.o.getActivation() != "none") {
    why = "o_proj is not a linear over [Hq D, N] without an activation after a reshape";
    return failure();
  }
  auto heads = planHeads(a.hq, a.hkv, ranks, why);
  if (failed(heads))
    return failure();
  a.heads = *heads;
  // A rank without heads adds zeros shaped like o_proj's output, made from
  // the block's input: that needs them to be the same width, and nothing
  // else to read the attention output's dims.
  Value x = a.fused ? a.fused.getX() : a.proj[0].getX();
  bool empty = llvm::any_of(a.heads.q, [](const Range &r) { return r.count == 0; });
  if (empty && (dim(x, -1) != dim(a.o.getY(), -1) || x.getType() != a.o.getY().getType())) {
    why = "a rank gets no heads, and the attention input's type differs from o_proj's output";
    return failure();
  }
  if (empty && a.outShapeRead) {
    why = "a rank gets no heads, and the attention output's dims are read besides o_proj "
          "(a rank without heads has no output to read them from)";
    return failure();
  }
  return success();
}

/// Gives a reshape that merges [.., H, D] into [.., H D] the rank's width.
static void narrowMerge(OpBuilder &b, ReshapeOp merge, int64_t width) {
  const int64_t last = shapeLength(merge.getShape()) - 1;
  ShapeSlot slot = *shapeSlot(merge.getShape(), last);
  if (slot.values[slot.at] != -1)
    setShapeElement(b, merge, last, width);
  Value r = merge->getResult(0);
  r.setType(withDim(r, -1, width));
}

/// The kiln.shape readers of the projections' outputs read only the dims a
/// linear keeps from its input (traceToProjection checks): point them at
/// the input, which every rank has whole.
static void rewireProjectionShapes(Attention &a) {
  for (int i = 0; i < 3; ++i) {
    LinearOp p = a.fused ? a.fused : a.proj[i];
    rewireShapeReaders(a.source[i], p.getX());
    rewireShapeReaders(p.getY(), p.getX());
  }
}

/// Rank r's heads: three column-sliced projections, the chains retyped to
/// its head counts, its KV cache inputs narrowed, o_proj's rows, and the
/// all_reduce that sums the ranks' o_proj outputs.
void Partitioner::rewriteAttention(Attention &a) {
  const Range q = a.heads.q[rank], kv = a.heads.kv[rank];
  rewireProjectionShapes(a);
  if (q.count == 0)
    return zeroAttention(a);
  const int64_t d = a.d, hq = a.hq, hkv = a.hkv;
  // Column ranges of q, k, v in the fused weight (or each one's own).
  const int64_t offsets[3] = {q.first * d, (hq + kv.first) * d, (hq + hkv + kv.first) * d};
  const int64_t sizes[3] = {q.count * d, kv.count * d, kv.count * d};
  Value projected[3];
  for (int i = 0; i < 3; ++i) {
    LinearOp src = a.fused ? a.fused : a.proj[i];
    b.setInsertionPoint(src);
    int64_t full = dim(src.getW(), 1);
    int64_t off = a.fused ? offsets[i]
                          : offsets[i] - (i == 0   ? 0
                                          : i == 1 ? hq * d
                                                   : (hq + hkv) * d);
    Value w = slice(src.getW(), 1, off, sizes[i], full);
    Value bias = src.getBias() ? slice(src.getBias(), 0, off, sizes[i], full) : Value();
    Value old = a.fused ? a.source[i] : src.getY();
    auto lin = b.create<LinearOp>(src.getLoc(), withDim(old, -1, sizes[i]), src.getX(), w, bias,
                                  src.getActivationAttr());
    projected[i] = lin.getY();
  }
  const int64_t axis = a.pa.getLayout() == "bshd" ? 2 : 1;
  for (int i = 0; i < 3; ++i) {
    const int64_t heads = i == 0 ? q.count : kv.count;
    SmallVector<int64_t> axes = headAxes(a.in[i], axis);
    auto reshape = cast<ReshapeOp>(a.in[i].back());
    reshape.getDataMutable().assign(projected[i]);
    if (shapeSlot(reshape.getShape(), axes.back())
            ->values[shapeSlot(reshape.getShape(), axes.back())->at] != -1)
      setShapeElement(b, reshape, axes.back(), heads);
    for (size_t j = 0; j < a.in[i].size(); ++j) {
      Value r = a.in[i][j]->getResult(0);
      r.setType(withDim(r, axes[j], heads));
    }
  }
  for (Value cache : {a.pa.getKCache(), a.pa.getVCache()})
    cache.setType(withDim(cache, 1, kv.count));
  Value(a.pa.getOutput()).setType(withDim(a.pa.getOutput(), axis, q.count));
  int64_t outAxis = axis;
  for (Operation *op : a.out) {
    Value r = op->getResult(0);
    if (auto t = dyn_cast<TransposeOp>(op)) {
      // The result's dim i is the operand's dim perm[i].
      ArrayRef<int64_t> perm = t.getPerm();
      outAxis = std::find(perm.begin(), perm.end(), outAxis) - perm.begin();
      r.setType(withDim(r, outAxis, q.count));
    } else {
      narrowMerge(b, cast<ReshapeOp>(op), q.count * d);
    }
  }
  for (ReshapeOp merge : a.sideMerges)
    narrowMerge(b, merge, q.count * d);
  LinearOp o = a.o;
  b.setInsertionPoint(o);
  Value w = slice(o.getW(), 0, q.first * d, q.count * d, hq * d);
  // The bias is added once: by rank 0, before the sum.
  Value bias = rank == 0 ? o.getBias() : Value();
  auto rowLinear =
      b.create<LinearOp>(o.getLoc(), o.getY().getType(), o.getX(), w, bias, o.getActivationAttr());
  Value sum = allReduce(rowLinear.getY());
  o.getY().replaceAllUsesWith(sum);
  o.erase();
  if (a.fused) {
    for (Operation *part : a.parts) {
      part->dropAllUses();
      part->erase();
    }
    a.fused.erase();
  } else {
    for (LinearOp p : a.proj)
      p.erase();
  }
}

/// A rank without heads (fewer heads than ranks) computes nothing for this
/// layer; it still joins the all_reduce, with zeros. Its KV cache inputs
/// keep their place in the interface with no heads.
void Partitioner::zeroAttention(Attention &a) {
  Value x = a.fused ? a.fused.getX() : a.proj[0].getX();
  b.setInsertionPoint(a.o);
  auto type = cast<RankedTensorType>(x.getType());
  auto scalar = RankedTensorType::get({}, type.getElementType());
  Value zero = b.create<ConstantOp>(
      a.o.getLoc(), scalar, DenseElementsAttr::get(scalar, b.getZeroAttr(type.getElementType())),
      StringAttr());
  Value zeros = b.create<MulOp>(a.o.getLoc(), type, x, zero);
  Value sum = allReduce(zeros);
  a.o.getY().replaceAllUsesWith(sum);
  Value caches[2] = {a.pa.getKCache(), a.pa.getVCache()};
  // Everything from the projections to o_proj goes, users first.
  SmallVector<Operation *> dead = {a.o};
  for (Operation *op : llvm::reverse(a.out))
    dead.push_back(op);
  dead.push_back(a.pa);
  for (int i = 0; i < 3; ++i)
    for (Operation *op : a.in[i])
      dead.push_back(op);
  if (a.fused) {
    for (Operation *part : a.parts)
      dead.push_back(part);
    dead.push_back(a.fused);
  } else {
    for (LinearOp p : a.proj)
      dead.push_back(p);
  }
  for (Operation *op : dead) {
    op->dropAllUses();
    op->erase();
  }
  for (Value cache : caches)
    cache.setType(withDim(cache, 1, 0));
}

} // namespace kiln::partition
