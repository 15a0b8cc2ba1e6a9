//===- InjectMoe.cpp - a mixture-of-experts block into kiln.moe ----------===//
//
// Rooted at the router's TopK, after the gated-MLP stage (each expert is a
// gated_mlp by then), the block Hugging Face's sparse MoE exports to
// (Qwen3-MoE, Mixtral, Qwen2-MoE's routed part; transformers 4.5x):
//
//   probs   = softmax(linear(x, Wr))               (router, [T, E])
//   w, idx  = topk(probs, k)                        (w / sum(w) when normalized)
//     or    = topk(linear(x, Wr), k); w = softmax(w)  (softmax after selection:
//                                                    the same, normalized)
//   mask    = transpose(one_hot(idx, E), [2, 1, 0]) ([E, k, T])
//   for e in 0..E-1:                                (unrolled, one per expert)
//     pos, rows = nonzero(mask[e])
//     y_e   = gated_mlp_e(x[rows]) * w[rows, pos]
//     acc   = acc + scatter_elements(zeros, rows, y_e)   (index_add_)
//
// The final acc becomes kiln.moe(x, Wr, stack(Wgu_e), stack(Wd_e)). Every
// expert 0..E-1 must be there once: an export traced over only the experts
// its example input hit (older transformers looped over `expert_hit`)
// computes the others as nothing, and is refused with that reason.
//
//===----------------------------------------------------------------------===//

#include "passes/InjectPatterns.h"
#include "passes/InjectUtils.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace kiln::inject {
namespace {

Value uncast(Value v) {
  while (auto c = v.getDefiningOp<CastOp>())
    v = c.getInput();
  return v;
}

/// Whether `target` is among the values `v` is computed from: a bounded
/// walk up its operands that does not enter the fused products (routing
/// values never pass through a linear, a gated MLP or attention, and the
/// whole network lies behind them).
bool dependsOn(Value v, Value target, int budget = 512) {
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Operation *, 32> seen;
  while (!work.empty() && budget-- > 0) {
    Value x = work.pop_back_val();
    if (x == target)
      return true;
    Operation *op = x.getDefiningOp();
    if (!op || !seen.insert(op).second)
      continue;
    if (isa<GatedMlpOp, LinearOp, AttentionOp, MoeOp, ConstantOp>(op))
      continue;
    work.append(op->operand_begin(), op->operand_end());
  }
  return false;
}

/// The ops reachable from `v` through its users, a few steps deep.
SmallVector<Operation *> usersWithin(Value v, int depth) {
  SmallVector<Operation *> out;
  llvm::SmallPtrSet<Operation *, 32> seen;
  SmallVector<std::pair<Value, int>> work{{v, 0}};
  while (!work.empty()) {
    auto [x, d] = work.pop_back_val();
    for (Operation *u : x.getUsers()) {
      if (!seen.insert(u).second)
        continue;
      out.push_back(u);
      if (d + 1 < depth)
        for (Value r : u->getResults())
          work.push_back({r, d + 1});
    }
  }
  return out;
}

struct Expert {
  GatedMlpOp mlp;
  ScatterElementsOp scatter;
  AddOp add;
};

struct MoePattern : OpRewritePattern<TopKOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TopKOp topk, PatternRewriter &rewriter) const override {
    auto fail = [&](const Twine &why) {
      return rewriter.notifyMatchFailure(topk, "moe: " + why);
    };
    auto k = getConstantIntValues(topk.getK());
    if (!k || k->size() != 1 || topk.getLargest() != 1 || rankOf(topk.getInput()) != 2 ||
        (topk.getAxis() != -1 && topk.getAxis() != 1))
      return fail("not a top-k of the largest along the experts of [tokens, experts]");
    // Softmax before the selection (Hugging Face's blocks), or after it:
    // the top k of the router's logits, then a softmax over those k, which
    // is the picked probabilities renormalized (softmax is monotonic, so
    // the same experts, in the same order, are picked).
    auto softmax = uncast(topk.getInput()).getDefiningOp<SoftmaxOp>();
    if (softmax && softmax.getAxis() != -1 && softmax.getAxis() != 1)
      return fail("the top-k picks from a softmax that is not over the experts");
    auto router = uncast(softmax ? softmax.getInput() : topk.getInput()).getDefiningOp<LinearOp>();
    if (!router)
      return fail("the top-k does not pick from a softmax over the experts or from the "
                  "router's logits");
    if (router.getBias() || router.getActivation() != "none" || !isStaticFloat(router.getW(), 2))
      return fail("the router is not a linear(x, W) without bias");
    Value x = router.getX(), wr = router.getW();
    const int64_t experts = dimOf(wr, 1), topK = (*k)[0];
    if (rankOf(x) != 2 || experts <= 0 || topK < 1 || topK > experts)
      return fail("the router is not [tokens, hidden] x [hidden, experts]");

    // The weights: the picked probabilities, divided by their sum or not;
    // or, after the selection, the softmax of the picked logits.
    Value weights = topk.getValues();
    bool normalize = false;
    if (softmax) {
      for (Operation *u : topk.getValues().getUsers())
        if (auto div = dyn_cast<DivOp>(u); div && div.getA() == topk.getValues())
          if (auto sum = div.getB().getDefiningOp<ReduceSumOp>();
              sum && sum.getData() == topk.getValues()) {
            weights = div.getC();
            normalize = true;
          }
    } else {
      SoftmaxOp picked;
      for (Operation *u : topk.getValues().getUsers()) {
        if (auto c = dyn_cast<CastOp>(u); c && c.getOutput().hasOneUse())
          u = *c.getOutput().getUsers().begin();
        if (auto sm = dyn_cast<SoftmaxOp>(u); sm && (sm.getAxis() == -1 || sm.getAxis() == 1))
          picked = sm;
      }
      if (!picked)
        return fail("the top-k of the router's logits is not weighted by a softmax over the "
                    "picked experts");
      weights = picked.getOutput();
      normalize = true;
    }

    // The expert mask: transpose(one_hot(idx, E), [2, 1, 0]).
    Value mask;
    for (Operation *u : topk.getIndices().getUsers())
      if (auto oh = dyn_cast<OneHotOp>(u))
        if (auto depth = getConstantIntValues(oh.getDepth());
            depth && depth->size() == 1 && (*depth)[0] == experts && oh.getOutput().hasOneUse())
          if (auto tr = dyn_cast<TransposeOp>(*oh.getOutput().getUsers().begin());
              tr && tr.getPerm() == ArrayRef<int64_t>{2, 1, 0})
            mask = tr.getTransposed();
    if (!mask)
      return fail("the top-k's indices do not make the [experts, k, tokens] one-hot mask");

    // Each expert: mask[e] -> nonzero -> rows of x -> gated_mlp -> scaled by
    // its weights -> scattered into the running sum.
    SmallVector<std::optional<Expert>> found(experts);
    for (Operation *u : mask.getUsers()) {
      // Which experts any token picked (`expert_mask.sum(...) > 0`): what
      // an export looping over `expert_hit` traced, not part of the result.
      if (isa<ReduceSumOp>(u))
        continue;
      auto pick = dyn_cast<GatherOp>(u);
      auto e = pick ? getConstantIntValues(pick.getIndices()) : std::nullopt;
      if (pick && !e && dependsOn(pick.getIndices(), mask))
        return fail("the export loops over the experts its example input hit (`expert_hit`, "
                    "Mixtral in transformers 4.5x), so its graph holds those experts only, "
                    "picked by position: re-export with the block looping over every expert");
      if (!pick || pick.getAxis() != 0 || !e || e->size() != 1 || (*e)[0] < 0 ||
          (*e)[0] >= experts)
        return fail("the expert mask is read other than one expert at a time");
      NonZeroOp nz;
      for (Operation *v : usersWithin(pick.getOutput(), 2))
        if (auto n = dyn_cast<NonZeroOp>(v))
          nz = n;
      if (!nz)
        return fail(llvm::formatv("expert {0}'s tokens are not found with NonZero", (*e)[0]).str());
      Expert ex;
      for (Operation *v : usersWithin(nz.getOutput(), 8))
        if (auto g = dyn_cast<GatedMlpOp>(v); g && dependsOn(g.getX(), x) &&
                                               dependsOn(g.getX(), nz.getOutput()))
          ex.mlp = g;
      if (!ex.mlp)
        return fail(llvm::formatv("expert {0} is not a gated MLP over its routed rows of x "
                                  "(is the expert MLP fused?)",
                                  (*e)[0])
                        .str());
      for (Operation *v : usersWithin(ex.mlp.getY(), 4))
        if (auto s = dyn_cast<ScatterElementsOp>(v);
            s && s.getAxis() == 0 && s.getReduction() == "none" &&
            dependsOn(s.getUpdates(), ex.mlp.getY()) && dependsOn(s.getUpdates(), weights) &&
            dependsOn(s.getIndices(), nz.getOutput()) && s.getOutput().hasOneUse())
          if (auto add = dyn_cast<AddOp>(*s.getOutput().getUsers().begin())) {
            ex.scatter = s;
            ex.add = add;
          }
      if (!ex.scatter)
        return fail(llvm::formatv("expert {0}'s weighted output is not added back at its rows "
                                  "(index_add_ as ScatterElements + Add)",
                                  (*e)[0])
                        .str());
      if (found[(*e)[0]])
        return fail(llvm::formatv("expert {0} appears twice", (*e)[0]).str());
      found[(*e)[0]] = ex;
    }
    std::string missing;
    for (int64_t e = 0; e < experts; ++e)
      if (!found[e])
        missing += (missing.empty() ? "" : ", ") + std::to_string(e);
    if (!missing.empty())
      return fail("the export computes no output for experts " + missing + " of " +
                  std::to_string(experts) +
                  " (traced over only the experts its example input hit: re-export with a "
                  "transformers that loops over every expert)");

    // The running sum: each expert's Add takes the previous one's (or the
    // zeros) and its scatter; the last is the block's output.
    llvm::SmallPtrSet<Operation *, 16> adds;
    for (auto &ex : found)
      adds.insert(ex->add);
    AddOp last;
    for (auto &ex : found) {
      Value prev = inject::otherOperand(ex->add, ex->scatter.getOutput());
      if (!prev || !(adds.contains(prev.getDefiningOp()) ||
                     isa_and_nonnull<ConstantOfShapeOp>(prev.getDefiningOp())))
        return fail("the experts' outputs are not summed in one chain from zeros");
      if (llvm::none_of(ex->add->getUsers(), [&](Operation *u) { return adds.contains(u); })) {
        if (last)
          return fail("the experts' sum has two ends");
        last = ex->add;
      }
    }
    if (!last || last.getC().getType() != x.getType())
      return fail("the experts' sum is not [tokens, hidden] like x");

    // The experts' weights, stacked; all experts alike.
    SmallVector<Value> gateUps, downs;
    StringRef act = found[0]->mlp.getActivation();
    for (auto &ex : found) {
      if (ex->mlp.getActivation() != act || ex->mlp.getWGateUp().getType() !=
                                                found[0]->mlp.getWGateUp().getType() ||
          ex->mlp.getWDown().getType() != found[0]->mlp.getWDown().getType())
        return fail("the experts differ in activation or shape");
      gateUps.push_back(ex->mlp.getWGateUp());
      downs.push_back(ex->mlp.getWDown());
    }
    std::string name = constantName(wr);
    rewriter.setInsertionPoint(last);
    auto wgu = stackWeights(rewriter, last.getLoc(), gateUps, name + ".experts.w_gate_up");
    auto wd = stackWeights(rewriter, last.getLoc(), downs, name + ".experts.w_down");
    if (failed(wgu) || failed(wd))
      return fail("the experts' weights are not readable constants");
    rewriter.replaceOpWithNewOp<MoeOp>(last, x.getType(), x, wr, *wgu, *wd,
                                       rewriter.getI64IntegerAttr(topK),
                                       rewriter.getI64IntegerAttr(normalize ? 1 : 0),
                                       rewriter.getStringAttr(act));
    return success();
  }
};

} // namespace

void populateMoePatterns(RewritePatternSet &patterns) {
  patterns.add<MoePattern>(patterns.getContext());
}

} // namespace kiln::inject
