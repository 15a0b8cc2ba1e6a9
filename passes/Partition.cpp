//===- Partition.cpp - kiln-partition: one tensor-parallel rank's graph ----===//
//
// Rewrites @main into the graph rank `rank` of `tp-size` runs. The contract
// is in Passes.td and docs/tensor-parallel.md. Every layer is matched for
// all ranks before anything changes, so the ranks always agree on which
// layers are split (a layer split on one rank and whole on another would
// pair an all_reduce with nothing). The rules for MLPs, linear pairs, the
// embedding and the LM head live here, attention heads in
// PartitionAttention.cpp, shape helpers in PartitionShapes.cpp, the slicing
// arithmetic in PartitionShard.cpp.
//
//===----------------------------------------------------------------------===//

#include "passes/PartitionPass.h"
#include "passes/Partitioner.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <mutex>

namespace kiln {

#define GEN_PASS_DECL_KILNPARTITION
#define GEN_PASS_DEF_KILNPARTITION
#include "passes/PartitionPass.h.inc"

namespace partition {

LogicalResult Partitioner::replicate(Operation *op, StringRef what, const std::string &why) {
  if (requireAll)
    return op->emitError() << "cannot partition the " << what << " '" << nodeOf(op)
                           << "' (partition required): " << why;
  replicated.push_back(llvm::json::Object{{"node", nodeOf(op)}, {"what", what}, {"reason", why}});
  return success();
}

Value Partitioner::allReduce(Value partial) {
  return b.create<AllReduceOp>(partial.getLoc(), partial.getType(), partial,
                               b.getStringAttr("sum"));
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

/// Rank r's experts keep FFN columns [f0, f0 + n) of each: w_gate_up
/// [E, H, 2F] sliced along its last axis as two blocks of F (the gate's
/// columns, then the up's: the layout moe reads), w_down [E, F, H] along F.
/// Every rank routes the same way (the same router on the same input), so
/// the weighted sum of its partial experts, summed over the ranks, is the
/// whole layer's.
void Partitioner::rewriteMoe(MoeOp moe, Range r) {
  b.setInsertionPoint(moe);
  const int64_t ff = dim(moe.getWDown(), 1);
  Value gateUp = slice(moe.getWGateUp(), 2, r.first, r.count, ff, /*groups=*/2);
  Value down = slice(moe.getWDown(), 1, r.first, r.count, ff);
  auto part = b.create<MoeOp>(moe.getLoc(), moe.getY().getType(), moe.getX(), moe.getRouterW(),
                              gateUp, down, moe.getTopKAttr(), moe.getNormalizeAttr(),
                              moe.getActivationAttr());
  Value sum = allReduce(part.getY());
  moe.getY().replaceAllUsesWith(sum);
  moe.erase();
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
  p.cols = rankRanges(ff, ranks);
  return success();
}

/// The linear whose result @main returns as `logits` (directly or through
/// casts and reshapes), or null.
static LinearOp findLmHead(func::FuncOp f) {
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
  // A mixture of experts: each expert's FFN split as a gated MLP's (every
  // rank holds every expert's slice and the whole router).
  std::vector<std::pair<MoeOp, std::vector<Range>>> moes;
  for (auto moe : f.getOps<MoeOp>()) {
    const int64_t ff = dim(moe.getWDown(), 1);
    if (!isStaticWeight(moe.getWGateUp(), 3) || !isStaticWeight(moe.getWDown(), 3) ||
        ff < ranks) {
      if (failed(replicate(moe, "moe",
                           "its expert weights are not constants with at least one FFN "
                           "column per rank")))
        return failure();
      continue;
    }
    moes.push_back({moe, rankRanges(ff, ranks)});
  }
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
    mlps.push_back({mlp, rankRanges(ff, ranks)});
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
  for (auto &entry : patterns) {
    const std::string &text = entry.first;
    const llvm::GlobPattern &pattern = entry.second;
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
      headVocab = rankRanges(v, ranks);
    }
  }
  if (embedding)
    vocab = rankRanges(dim(embedding.getData(), 0), ranks);

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
  for (auto &[moe, cols] : moes)
    layers.push_back(llvm::json::Object{
        {"node", nodeOf(moe)},
        {"kind", "moe"},
        {"split", "each expert's gate and up columns and down rows + all_reduce; router whole"},
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
  for (auto &[moe, cols] : moes)
    rewriteMoe(moe, cols[rank]);
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

} // namespace partition

namespace {

using namespace mlir;
using partition::Partitioner;

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

