//===- PartitionAttention.cpp - kiln-partition's attention heads ---------===//
//
// One attention layer split by heads: matching the projection -> reshape ->
// [transpose] -> [rotary] -> paged_attention -> o_proj chains, and rewriting
// them to rank r's heads (or to nothing, for a rank with no heads). Also the
// shape and constant helpers the rest of the pass (Partition.cpp) uses.
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioner.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln::partition {

int64_t dim(Value v, int64_t i) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() == 0)
    return ShapedType::kDynamic;
  if (i < 0)
    i += t.getRank();
  return i >= 0 && i < t.getRank() ? t.getDimSize(i) : ShapedType::kDynamic;
}

/// `v`'s type with dim `axis` set to `n`.
Type withDim(Value v, int64_t axis, int64_t n) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  if (axis < 0)
    axis += t.getRank();
  shape[axis] = n;
  return t.clone(shape);
}

bool isStaticWeight(Value v, int64_t rank) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return v.getDefiningOp<ConstantOp>() && t && t.hasStaticShape() && t.getRank() == rank;
}

std::string nodeOf(Operation *op) {
  std::string n = plan::nodeName(op->getLoc());
  return n.empty() ? op->getName().getStringRef().str() : n;
}

/// The values of a small i64 constant, or nullopt.
std::optional<SmallVector<int64_t>> constInts(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseIntElementsAttr>(c.getValue()) : nullptr;
  if (!dense)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const APInt &x : dense.getValues<APInt>())
    out.push_back(x.getSExtValue());
  return out;
}

Value i64Const(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())}, b.getI64Type());
  return b.create<ConstantOp>(loc, type, DenseIntElementsAttr::get(type, values), StringAttr());
}

std::optional<ShapeSlot> shapeSlot(Value shape, int64_t index) {
  ShapeSlot slot;
  if (auto values = constInts(shape)) {
    if (index < 0 || index >= static_cast<int64_t>(values->size()))
      return std::nullopt;
    slot.at = index;
    slot.values = *values;
    return slot;
  }
  auto concat = shape.getDefiningOp<ConcatOp>();
  if (!concat)
    return std::nullopt;
  int64_t start = 0;
  for (unsigned i = 0; i < concat->getNumOperands(); ++i) {
    int64_t n = dim(concat->getOperand(i), 0);
    if (ShapedType::isDynamic(n))
      return std::nullopt;
    if (index < start + n) {
      auto values = constInts(concat->getOperand(i));
      if (!values)
        return std::nullopt;
      slot.concat = concat;
      slot.piece = i;
      slot.at = index - start;
      slot.values = *values;
      return slot;
    }
    start += n;
  }
  return std::nullopt;
}

/// The length of a 1-D reshape target, or -1.
int64_t shapeLength(Value shape) {
  int64_t n = dim(shape, 0);
  return ShapedType::isDynamic(n) ? -1 : n;
}

/// Gives `reshape` a target whose element `index` is `value`. A shared
/// target (CSE merges equal ones across layers) is copied, never changed.
void setShapeElement(OpBuilder &b, ReshapeOp reshape, int64_t index, int64_t value) {
  ShapeSlot slot = *shapeSlot(reshape.getShape(), index);
  slot.values[slot.at] = value;
  b.setInsertionPoint(reshape);
  Value piece = i64Const(b, reshape.getLoc(), slot.values);
  if (!slot.concat) {
    reshape.getShapeMutable().assign(piece);
    return;
  }
  Operation *copy = b.clone(*slot.concat);
  copy->setOperand(slot.piece, piece);
  reshape.getShapeMutable().assign(copy->getResult(0));
}

/// DeepSpeed's uneven split of the query heads; each rank keeps the KV
/// heads its query heads read. Fails when a rank's query heads would read
/// their KV heads in groups of unequal size (paged_attention maps query
/// head h to KV head h / (Hq_r / Hkv_r)).
FailureOr<HeadPlan> planHeads(int64_t hq, int64_t hkv, int64_t ranks, std::string &why) {
  if (hkv <= 0 || hq % hkv != 0) {
    why = "query heads (" + std::to_string(hq) + ") are not a multiple of KV heads (" +
          std::to_string(hkv) + ")";
    return failure();
  }
  const int64_t group = hq / hkv;
  HeadPlan plan;
  for (int64_t r = 0; r < ranks; ++r) {
    Range q = rankRange(hq, ranks, r), kv;
    if (q.count > 0) {
      kv.first = q.first / group;
      kv.count = (q.first + q.count - 1) / group + 1 - kv.first;
      bool uniform = q.count % kv.count == 0;
      for (int64_t i = 0; uniform && i < q.count; ++i)
        uniform = (q.first + i) / group - kv.first == i / (q.count / kv.count);
      if (!uniform) {
        why = "rank " + std::to_string(r) + "'s query heads [" + std::to_string(q.first) + ", " +
              std::to_string(q.first + q.count) + ") read " + std::to_string(kv.count) +
              " KV heads in unequal groups (" + std::to_string(hq) + " query heads, " +
              std::to_string(hkv) + " KV heads, " + std::to_string(ranks) + " ranks)";
        return failure();
      }
    }
    plan.q.push_back(q);
    plan.kv.push_back(kv);
  }
  return plan;
}

llvm::json::Array counts(const std::vector<Range> &ranges) {
  llvm::json::Array a;
  for (const Range &r : ranges)
    a.push_back(r.count);
  return a;
}

namespace {

/// Walks from `v` back to the value a projection made, through single-use
/// rotary, transpose ([0, 2, 1, 3]) and reshape ops; the last op recorded is
/// the reshape that splits the projection's columns into heads.
Value traceToProjection(Value v, SmallVector<Operation *> &ops, std::string &why) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<SplitOp, LinearOp>(def) ||
        (isa<SliceOp>(def) && cast<SliceOp>(def).getData().getDefiningOp<LinearOp>())) {
      if (ops.empty() || !isa<ReshapeOp>(ops.back()) || !v.hasOneUse()) {
        why = "the projection's output is not only reshaped into heads";
        return nullptr;
      }
      return v;
    }
    if (!v.hasOneUse()) {
      why = "an intermediate of q/k/v (" + nodeOf(def) + ") has another reader";
      return nullptr;
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
  Value sources[3];
  for (int i = 0; i < 3; ++i)
    if (!(sources[i] = traceToProjection(operands[i], a.in[i], why)))
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
  for (int i = 0; i < 3; ++i)
    a.source[i] = sources[i];
  const int64_t widths[3] = {a.hq * a.d, a.hkv * a.d, a.hkv * a.d};
  if (auto split = sources[0].getDefiningOp<SplitOp>()) {
    a.parts.push_back(split);
    a.fused = split.getInput().getDefiningOp<LinearOp>();
    bool ordered = split.getNumResults() == 3 && sources[0] == split.getResult(0) &&
                   sources[1] == split.getResult(1) && sources[2] == split.getResult(2);
    int64_t sa = split.getAxis();
    int64_t last = cast<RankedTensorType>(split.getInput().getType()).getRank() - 1;
    if (!a.fused || !ordered || (sa != -1 && sa != last) || !a.fused.getY().hasOneUse()) {
      why = "the split is not q, k, v of one fused projection along its columns";
      return failure();
    }
  } else if (sources[0].getDefiningOp<SliceOp>()) {
    // Phi-3: one qkv_proj, then three slices of its columns.
    int64_t start = 0;
    for (int i = 0; i < 3; ++i) {
      auto slice = sources[i].getDefiningOp<SliceOp>();
      auto starts = slice ? constInts(slice.getStarts()) : std::nullopt;
      auto ends = slice ? constInts(slice.getEnds()) : std::nullopt;
      auto axes = slice && slice.getAxes() ? constInts(slice.getAxes()) : std::nullopt;
      LinearOp from = slice ? slice.getData().getDefiningOp<LinearOp>() : LinearOp();
      int64_t rank = slice ? cast<RankedTensorType>(slice.getData().getType()).getRank() : 0;
      bool lastAxis = axes && axes->size() == 1 && ((*axes)[0] == -1 || (*axes)[0] == rank - 1);
      if (!from || (a.fused && from != a.fused) || slice.getSteps() || !starts || !ends ||
          !lastAxis || starts->size() != 1 || (*starts)[0] != start ||
          (*ends)[0] < start + widths[i]) {
        why = "q, k, v are not consecutive column slices of one fused projection";
        return failure();
      }
      a.fused = from;
      a.parts.push_back(slice);
      start += widths[i];
    }
    for (Operation *user : a.fused.getY().getUsers())
      if (!llvm::is_contained(a.parts, user)) {
        why = "the fused projection has a reader besides the q, k, v slices";
        return failure();
      }
  }
  if (a.fused) {
    if (!isStaticWeight(a.fused.getW(), 2) || dim(a.fused.getW(), 1) != (a.hq + 2 * a.hkv) * a.d) {
      why = "the fused QKV weight is not a [K, (Hq + 2 Hkv) D] constant";
      return failure();
    }
  } else {
    for (int i = 0; i < 3; ++i) {
      a.proj[i] = sources[i].getDefiningOp<LinearOp>();
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
  // pa -> [transpose] -> reshape [.., Hq D] -> o_proj.
  Value v = pa.getOutput();
  while (true) {
    if (!v.hasOneUse()) {
      why = "attention's output has more than one reader";
      return failure();
    }
    Operation *user = *v.getUsers().begin();
    if (auto o = dyn_cast<LinearOp>(user); o && o.getX() == v) {
      a.o = o;
      break;
    }
    bool isT = isa<TransposeOp>(user) && a.out.empty();
    auto reshape = dyn_cast<ReshapeOp>(user);
    if (!isT && !(reshape && reshape.getData() == v)) {
      why = "attention's output goes to " + user->getName().getStringRef().str() +
            ", not a reshape and o_proj";
      return failure();
    }
    if (reshape) {
      int64_t n = shapeLength(reshape.getShape());
      auto slot = n > 0 ? shapeSlot(reshape.getShape(), n - 1) : std::nullopt;
      int64_t last = slot ? slot->values[slot->at] : 0;
      if (!slot || (last != a.hq * a.d && last != -1)) {
        why = "the reshape after attention does not end in Hq * D";
        return failure();
      }
    }
    a.out.push_back(user);
    v = user->getResult(0);
  }
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
  // the block's input: that needs them to be the same width.
  Value x = a.fused ? a.fused.getX() : a.proj[0].getX();
  bool empty = llvm::any_of(a.heads.q, [](const Range &r) { return r.count == 0; });
  if (empty && (dim(x, -1) != dim(a.o.getY(), -1) || x.getType() != a.o.getY().getType())) {
    why = "a rank gets no heads, and the attention input's type differs from o_proj's output";
    return failure();
  }
  return success();
}

/// Rank r's heads: three column-sliced projections, the chains retyped to
/// its head counts, its KV cache inputs narrowed, o_proj's rows, and the
/// all_reduce that sums the ranks' o_proj outputs.
void Partitioner::rewriteAttention(Attention &a) {
  const Range q = a.heads.q[rank], kv = a.heads.kv[rank];
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
      auto reshape = cast<ReshapeOp>(op);
      const int64_t last = shapeLength(reshape.getShape()) - 1;
      ShapeSlot slot = *shapeSlot(reshape.getShape(), last);
      if (slot.values[slot.at] != -1)
        setShapeElement(b, reshape, last, q.count * d);
      r.setType(withDim(r, -1, q.count * d));
    }
  }
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
