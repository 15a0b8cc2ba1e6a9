//===- Partition.cpp - kiln-partition: one tensor-parallel rank's graph ----===//
//
// Rewrites @main into the graph rank `rank` of `tp-size` runs. The contract
// is in Passes.td and docs/tensor-parallel.md. Every layer is matched for
// all ranks before anything changes, so the ranks always agree on which
// layers are split (a layer split on one rank and whole on another would
// pair an all_reduce with nothing). The rules that rewrite live here; the
// slicing arithmetic lives in PartitionShard.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnCollectiveOps.h"
#include "compiler/plan/PlanAttrs.h"
#include "passes/PartitionPass.h"
#include "passes/PartitionShard.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/JSON.h"

#include <mutex>

namespace kiln {

#define GEN_PASS_DECL_KILNPARTITION
#define GEN_PASS_DEF_KILNPARTITION
#include "passes/PartitionPass.h.inc"

namespace {

using namespace mlir;
using partition::Range;
using partition::rankRange;

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

/// Where element `index` of a reshape target lives: the target is a
/// constant, or a concat of 1-D pieces (a shape built from the input's
/// dims and constant head counts), and the piece holding it is a constant.
struct ShapeSlot {
  ConcatOp concat;    // null: the target itself is the constant
  unsigned piece = 0; // the concat operand
  int64_t at = 0;     // the element within the constant
  SmallVector<int64_t> values;
};

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

/// How the ranks share one attention layer's heads.
struct HeadPlan {
  std::vector<Range> q, kv;
};

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

/// One attention layer as kiln-ragged and kiln-inject leave it: the
/// projection, per q/k/v a chain of reshape -> [transpose] -> [rotary] to
/// paged_attention, then [transpose] -> reshape -> o_proj.
struct Attention {
  PagedAttentionOp pa;
  LinearOp fused;                    // fused QKV, split into three; or null
  SmallVector<Operation *, 3> parts; // the fused projection's split, or its 3 slices
  Value source[3];                   // what the q, k, v reshapes read
  LinearOp proj[3];                  // separate projections (no fused one)
  SmallVector<Operation *> in[3];    // q, k, v chains, from pa back to the reshape
  SmallVector<Operation *> out;      // from pa's result to o_proj's input
  LinearOp o;
  int64_t hq = 0, hkv = 0, d = 0;
  HeadPlan heads;
};

/// A column-split linear -> elementwise ops -> row-split linear pair (an
/// MLP without a gate, or a pair the manual policy names).
struct LinearPair {
  LinearOp col, row;
  SmallVector<Operation *> between;
  std::vector<Range> cols;
  bool manual = false;
};

class Partitioner {
public:
  Partitioner(func::FuncOp f, int64_t ranks, int64_t rank, ArrayRef<std::string> globs,
              bool requireAll)
      : f(f), ranks(ranks), rank(rank), requireAll(requireAll), b(f.getContext()) {
    for (const std::string &g : globs)
      if (auto p = llvm::GlobPattern::create(g))
        patterns.push_back({g, std::move(*p)});
  }
  LogicalResult run();
  llvm::json::Object report();

private:
  LogicalResult matchAttention(PagedAttentionOp pa, Attention &a, std::string &why);
  LogicalResult matchPairInto(LinearOp row, LinearPair &p, std::string &why);
  LogicalResult replicate(Operation *op, StringRef what, const std::string &why);
  bool taken(Operation *op) const { return used.contains(op); }
  void rewriteAttention(Attention &a);
  void zeroAttention(Attention &a);
  void rewriteGatedMlp(GatedMlpOp mlp, Range f);
  void rewritePair(LinearPair &p);
  void rewriteEmbedding(GatherOp g, const std::vector<Range> &vocab);
  void rewriteLmHead(LinearOp head, const std::vector<Range> &vocab);
  Value allReduce(Value partial);
  Value slice(Value w, int64_t axis, int64_t offset, int64_t count, int64_t fullDim,
              int64_t groups = 1) {
    return partition::sliceWeight(b, w, axis, offset, count, fullDim, groups, rank);
  }
  void eraseDead();

  func::FuncOp f;
  int64_t ranks, rank;
  bool requireAll;
  OpBuilder b;
  std::vector<std::pair<std::string, llvm::GlobPattern>> patterns;
  llvm::DenseSet<Operation *> used;
  llvm::json::Array layers, replicated;
};

LogicalResult Partitioner::replicate(Operation *op, StringRef what, const std::string &why) {
  if (requireAll)
    return op->emitError() << "cannot partition the " << what << " '" << nodeOf(op)
                           << "' (partition required): " << why;
  replicated.push_back(llvm::json::Object{{"node", nodeOf(op)}, {"what", what}, {"reason", why}});
  return success();
}

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

Value Partitioner::allReduce(Value partial) {
  return b.create<AllReduceOp>(partial.getLoc(), partial.getType(), partial,
                               b.getStringAttr("sum"));
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

/// Rank r's gate and up columns are two ranges of w_gate_up, which one
/// plan weight cannot hold (a ShardSpec is one range), so the rank's MLP is
/// act(x @ gate_r) * (x @ up_r) @ down_r: two column-sliced linears, a
/// multiply and a row-sliced linear, then the sum. The GEMMs read the same
/// bytes the fused op would; the multiply is one extra pass over [T, F_r].
void Partitioner::rewriteGatedMlp(GatedMlpOp mlp, Range r) {
  b.setInsertionPoint(mlp);
  Location loc = mlp.getLoc();
  const int64_t ff = dim(mlp.getWDown(), 0);
  Value gateW = slice(mlp.getWGateUp(), 1, r.first, r.count, 2 * ff);
  Value upW = slice(mlp.getWGateUp(), 1, ff + r.first, r.count, 2 * ff);
  Value down = slice(mlp.getWDown(), 0, r.first, r.count, ff);
  Type hidden = withDim(mlp.getY(), -1, r.count);
  Value gate = b.create<LinearOp>(loc, hidden, mlp.getX(), gateW, Value(), mlp.getActivationAttr());
  Value up = b.create<LinearOp>(loc, hidden, mlp.getX(), upW, Value(), b.getStringAttr("none"));
  Value prod = b.create<MulOp>(loc, hidden, gate, up);
  Value part =
      b.create<LinearOp>(loc, mlp.getY().getType(), prod, down, Value(), b.getStringAttr("none"));
  Value sum = allReduce(part);
  mlp.getY().replaceAllUsesWith(sum);
  mlp.erase();
}

void Partitioner::rewritePair(LinearPair &p) {
  const Range r = p.cols[rank];
  LinearOp col = p.col, row = p.row;
  const int64_t ff = dim(col.getW(), 1);
  b.setInsertionPoint(col);
  Value w = slice(col.getW(), 1, r.first, r.count, ff);
  Value bias = col.getBias() ? slice(col.getBias(), 0, r.first, r.count, ff) : Value();
  auto colLinear = b.create<LinearOp>(col.getLoc(), withDim(col.getY(), -1, r.count), col.getX(), w,
                                      bias, col.getActivationAttr());
  col.getY().replaceAllUsesWith(colLinear.getY());
  col.erase();
  for (Operation *op : p.between)
    op->getResult(0).setType(withDim(op->getResult(0), -1, r.count));
  b.setInsertionPoint(row);
  Value rw = slice(row.getW(), 0, r.first, r.count, ff);
  auto rowLinear = b.create<LinearOp>(row.getLoc(), row.getY().getType(), row.getX(), rw,
                                      rank == 0 ? row.getBias() : Value(), row.getActivationAttr());
  Value sum = allReduce(rowLinear.getY());
  row.getY().replaceAllUsesWith(sum);
  row.erase();
}

/// Rank r holds rows [v0, v0 + n) of the table: a token outside them reads
/// row 0 and is zeroed, so the all_reduce sums exactly one real row.
void Partitioner::rewriteEmbedding(GatherOp g, const std::vector<Range> &vocab) {
  const Range r = vocab[rank];
  Location loc = g.getLoc();
  b.setInsertionPoint(g);
  Value ids = g.getIndices();
  auto idsType = cast<RankedTensorType>(ids.getType());
  Type idElem = idsType.getElementType();
  auto scalarOf = [&](Type elem, Attribute value) -> Value {
    auto t = RankedTensorType::get({}, elem);
    return b.create<ConstantOp>(loc, t, DenseElementsAttr::get(t, value), StringAttr());
  };
  Value first = scalarOf(idElem, b.getIntegerAttr(idElem, r.first));
  Value count = scalarOf(idElem, b.getIntegerAttr(idElem, r.count));
  Value zeroId = scalarOf(idElem, b.getIntegerAttr(idElem, 0));
  auto boolType = idsType.clone(b.getI1Type());
  Value local = b.create<SubOp>(loc, idsType, ids, first);
  Value ge = b.create<GreaterOrEqualOp>(loc, boolType, local, zeroId);
  Value lt = b.create<LessOp>(loc, boolType, local, count);
  Value inside = b.create<AndOp>(loc, boolType, ge, lt);
  Value safe = b.create<WhereOp>(loc, idsType, inside, local, zeroId);
  const int64_t v = dim(g.getData(), 0);
  Value table = slice(g.getData(), 0, r.first, r.count, v);
  auto rows = b.create<GatherOp>(loc, g.getOutput().getType(), table, safe, g.getAxisAttr());
  SmallVector<int64_t> maskShape(idsType.getShape());
  maskShape.push_back(1);
  Value axes = i64Const(b, loc, {-1});
  Value mask =
      b.create<UnsqueezeOp>(loc, RankedTensorType::get(maskShape, b.getI1Type()), inside, axes);
  auto outType = cast<RankedTensorType>(g.getOutput().getType());
  Value zero = scalarOf(outType.getElementType(), b.getZeroAttr(outType.getElementType()));
  Value masked = b.create<WhereOp>(loc, outType, mask, rows, zero);
  Value sum = allReduce(masked);
  g.getOutput().replaceAllUsesWith(sum);
  g.erase();
}

/// Rank r computes vocabulary columns [v0, v0 + n) of the logits; the
/// all_gather puts every rank's columns side by side in rank order.
void Partitioner::rewriteLmHead(LinearOp head, const std::vector<Range> &vocab) {
  const Range r = vocab[rank];
  b.setInsertionPoint(head);
  const int64_t v = dim(head.getW(), 1);
  Value w = slice(head.getW(), 1, r.first, r.count, v);
  Value bias = head.getBias() ? slice(head.getBias(), 0, r.first, r.count, v) : Value();
  auto part = b.create<LinearOp>(head.getLoc(), withDim(head.getY(), -1, r.count), head.getX(), w,
                                 bias, head.getActivationAttr());
  SmallVector<int64_t> sizes;
  for (const Range &x : vocab)
    sizes.push_back(x.count);
  auto type = cast<RankedTensorType>(head.getY().getType());
  auto gathered =
      b.create<AllGatherOp>(head.getLoc(), type, part.getY(),
                            b.getI64IntegerAttr(type.getRank() - 1), b.getDenseI64ArrayAttr(sizes));
  head.getY().replaceAllUsesWith(gathered.getY());
  head.erase();
}

/// The linear that feeds `row` through single-use elementwise ops.
LogicalResult Partitioner::matchPairInto(LinearOp row, LinearPair &p, std::string &why) {
  p.row = row;
  Value v = row.getX();
  while (Operation *def = v.getDefiningOp()) {
    if (!v.hasOneUse()) {
      why = "its input (" + nodeOf(def) + ") has another reader";
      return failure();
    }
    if (auto col = dyn_cast<LinearOp>(def)) {
      p.col = col;
      break;
    }
    if (!isa<GeluOp, ReluOp, TanhOp, SigmoidOp>(def)) {
      why = "its input comes from " + def->getName().getStringRef().str() +
            ", not a linear through elementwise activations";
      return failure();
    }
    p.between.insert(p.between.begin(), def);
    v = def->getOperand(0);
  }
  if (!p.col) {
    why = "its input is a graph input, not a linear";
    return failure();
  }
  if (taken(p.col) || !isStaticWeight(p.col.getW(), 2) || !isStaticWeight(row.getW(), 2) ||
      dim(p.col.getW(), 1) != dim(row.getW(), 0) || row.getActivation() != "none") {
    why = "the linears are not [K, F] then [F, N] constants (the second without an activation)";
    return failure();
  }
  const int64_t ff = dim(row.getW(), 0);
  if (ff < ranks) {
    why = "its " + std::to_string(ff) + " rows are fewer than the ranks";
    return failure();
  }
  for (int64_t r = 0; r < ranks; ++r)
    p.cols.push_back(rankRange(ff, ranks, r));
  return success();
}

/// The linear whose result @main returns as `logits` (directly or through
/// casts and reshapes), or null.
LinearOp findLmHead(func::FuncOp f) {
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  for (unsigned i = 0; i < f.getNumResults(); ++i) {
    auto name = f.getResultAttrOfType<StringAttr>(i, "kiln.name");
    if (!name || name.getValue() != "logits")
      continue;
    Value v = ret.getOperand(i);
    while (Operation *def = v.getDefiningOp()) {
      if (auto head = dyn_cast<LinearOp>(def))
        return v.hasOneUse() ? head : LinearOp();
      if (!isa<CastOp, ReshapeOp>(def) || !v.hasOneUse())
        return LinearOp();
      v = def->getOperand(0);
    }
  }
  return LinearOp();
}

void Partitioner::eraseDead() {
  Block &body = f.getBody().front();
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (op.use_empty() && !op.hasTrait<OpTrait::IsTerminator>() && isPure(&op)) {
        op.erase();
        changed = true;
      }
  }
}

LogicalResult Partitioner::run() {
  // 1. Match every layer (for every rank) before changing anything.
  std::vector<Attention> attentions;
  std::string why;
  for (auto pa : llvm::to_vector(f.getOps<PagedAttentionOp>())) {
    Attention a;
    if (succeeded(matchAttention(pa, a, why))) {
      used.insert(a.o);
      attentions.push_back(std::move(a));
    } else if (failed(replicate(pa, "attention", why))) {
      return failure();
    }
  }
  for (auto att : f.getOps<AttentionOp>())
    if (failed(replicate(att, "attention",
                         "dense attention (the plan was not built ragged); "
                         "only paged_attention is split")))
      return failure();
  std::vector<std::pair<GatedMlpOp, std::vector<Range>>> mlps;
  for (auto mlp : f.getOps<GatedMlpOp>()) {
    const int64_t ff = dim(mlp.getWDown(), 0);
    if (!isStaticWeight(mlp.getWGateUp(), 2) || !isStaticWeight(mlp.getWDown(), 2) || ff < ranks) {
      if (failed(replicate(mlp, "mlp",
                           "its weights are not constants with at least one row "
                           "per rank")))
        return failure();
      continue;
    }
    std::vector<Range> cols;
    for (int64_t r = 0; r < ranks; ++r)
      cols.push_back(rankRange(ff, ranks, r));
    mlps.push_back({mlp, cols});
  }
  LinearOp head = findLmHead(f);
  // Row-parallel linears: the manual policy's first, then AutoTP's MLPs.
  std::vector<LinearPair> pairs;
  for (auto row : llvm::to_vector(f.getOps<LinearOp>())) {
    if (taken(row) || row == head)
      continue;
    std::string node = plan::nodeName(row.getLoc());
    const std::string *glob = nullptr;
    for (auto &[text, pattern] : patterns)
      if (pattern.match(node))
        glob = &text;
    LinearPair p;
    std::string pairWhy;
    if (succeeded(matchPairInto(row, p, pairWhy))) {
      p.manual = glob != nullptr;
      used.insert(p.col);
      used.insert(p.row);
      pairs.push_back(std::move(p));
    } else if (glob) {
      return row.emitError() << "injection_policy names '" << node << "' (glob '" << *glob
                             << "') as row-parallel, but " << pairWhy;
    }
  }
  // A glob matching o_proj is what AutoTP does anyway; one matching
  // nothing is a typo the user should hear about.
  for (auto &[text, pattern] : patterns) {
    bool any = false;
    f.walk([&](LinearOp l) { any |= pattern.match(plan::nodeName(l.getLoc())); });
    if (!any)
      return f.emitError() << "injection_policy glob '" << text << "' matches no linear op";
  }
  std::vector<Range> vocab;
  GatherOp embedding;
  // The token embedding: a gather by input_ids (a position embedding is
  // gathered by position_ids and stays whole).
  for (auto g : f.getOps<GatherOp>()) {
    auto ids = dyn_cast<BlockArgument>(g.getIndices());
    auto idsName =
        ids ? f.getArgAttrOfType<StringAttr>(ids.getArgNumber(), "kiln.name") : StringAttr();
    if (!isStaticWeight(g.getData(), 2) || g.getAxis() != 0 || !idsName ||
        idsName.getValue() != "input_ids")
      continue;
    if (dim(g.getData(), 0) < ranks) {
      if (failed(replicate(g, "embedding", "fewer rows than ranks")))
        return failure();
      continue;
    }
    embedding = g;
    break;
  }
  std::vector<Range> headVocab;
  if (head) {
    const int64_t v = dim(head.getW(), 1);
    if (!isStaticWeight(head.getW(), 2) || v < ranks || head.getActivation() != "none") {
      if (failed(replicate(head, "lm_head", "not a [H, V] constant projection with V >= ranks")))
        return failure();
      head = LinearOp();
    } else {
      for (int64_t r = 0; r < ranks; ++r)
        headVocab.push_back(rankRange(v, ranks, r));
    }
  }
  if (embedding)
    for (int64_t r = 0; r < ranks; ++r)
      vocab.push_back(rankRange(dim(embedding.getData(), 0), ranks, r));

  // 2. The report (the same on every rank), then rank r's rewrite.
  for (Attention &a : attentions)
    layers.push_back(llvm::json::Object{{"node", nodeOf(a.pa)},
                                        {"kind", "attention"},
                                        {"split", "heads: q/k/v columns, o_proj rows + all_reduce"},
                                        {"q_heads", a.hq},
                                        {"kv_heads", a.hkv},
                                        {"q_heads_per_rank", counts(a.heads.q)},
                                        {"kv_heads_per_rank", counts(a.heads.kv)},
                                        {"kv_replicated", a.hkv < ranks && a.hkv < a.hq}});
  for (auto &[mlp, cols] : mlps)
    layers.push_back(llvm::json::Object{
        {"node", nodeOf(mlp)},
        {"kind", "gated_mlp"},
        {"split", "gate and up columns (as two linears and a mul), down rows + all_reduce"},
        {"ffn_per_rank", counts(cols)}});
  for (LinearPair &p : pairs)
    layers.push_back(llvm::json::Object{
        {"node", nodeOf(p.row)},
        {"kind", p.manual ? "row_parallel (injection_policy)" : "mlp"},
        {"split", nodeOf(p.col) + " columns, " + nodeOf(p.row) + " rows + all_reduce"},
        {"ffn_per_rank", counts(p.cols)}});
  if (embedding)
    layers.push_back(llvm::json::Object{{"node", nodeOf(embedding)},
                                        {"kind", "embedding"},
                                        {"split", "vocab rows, masked lookup + all_reduce"},
                                        {"vocab_per_rank", counts(vocab)}});
  if (head)
    layers.push_back(llvm::json::Object{{"node", nodeOf(head)},
                                        {"kind", "lm_head"},
                                        {"split", "vocab columns + all_gather of the logits"},
                                        {"vocab_per_rank", counts(headVocab)}});

  for (Attention &a : attentions)
    rewriteAttention(a);
  for (auto &[mlp, cols] : mlps)
    rewriteGatedMlp(mlp, cols[rank]);
  for (LinearPair &p : pairs)
    rewritePair(p);
  if (embedding)
    rewriteEmbedding(embedding, vocab);
  if (head)
    rewriteLmHead(head, headVocab);
  eraseDead();
  Block &body = f.getBody().front();
  f.setType(FunctionType::get(f.getContext(), body.getArgumentTypes(),
                              body.getTerminator()->getOperandTypes()));
  return success();
}

llvm::json::Object Partitioner::report() {
  return llvm::json::Object{
      {"tp_size", ranks}, {"layers", std::move(layers)}, {"replicated", std::move(replicated)}};
}

struct KilnPartitionPass : impl::KilnPartitionBase<KilnPartitionPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp m = getOperation();
    if (tpSize < 1 || rank < 0 || rank >= tpSize) {
      m.emitError() << "kiln-partition: rank " << rank << " is not in [0, tp-size " << tpSize
                    << ")";
      return signalPassFailure();
    }
    for (const std::string &g : rowParallel)
      if (auto p = llvm::GlobPattern::create(g); !p) {
        m.emitError() << "injection_policy glob '" << g << "': " << llvm::toString(p.takeError());
        return signalPassFailure();
      }
    if (tpSize == 1)
      return;
    auto main = m.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal()) {
      m.emitError() << "kiln-partition: the module has no @main to partition";
      return signalPassFailure();
    }
    Partitioner p(main, tpSize, rank, rowParallel, requireAll);
    if (failed(p.run()))
      return signalPassFailure();
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::json::Value(p.report());
    m->setAttr("kiln.partition_report", StringAttr::get(m.getContext(), text));
  }
};

} // namespace

#define GEN_PASS_REGISTRATION
#include "passes/PartitionPass.h.inc"

void registerPartitionPass() {
  static std::once_flag once;
  std::call_once(once, [] { registerKilnPartitionPasses(); });
}

} // namespace kiln
