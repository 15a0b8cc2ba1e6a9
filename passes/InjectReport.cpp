//===- InjectReport.cpp - what kernel injection fused, per layer ----------===//
//
// A layer is fully injected when it has a fused attention and no Softmax
// left, at least one fused norm and no norm ReduceMean left, and a fused MLP
// (gated_mlp, or a linear with its activation folded in) with no MLP
// activation and no failed gated-MLP match left.
//
//===----------------------------------------------------------------------===//

#include "passes/InjectReport.h"

#include "compiler/dialect/KilnOps.h"
#include "passes/InjectUtils.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Regex.h"

#include <map>

using namespace mlir;

namespace kiln::inject {
namespace {

struct Part {
  int fused = 0;
  std::vector<std::string> unfused; // "node: reason"
};

struct LayerInfo {
  Part attention, norms, mlp;
  int moe = 0; // fused mixture-of-experts blocks (counted in mlp too)
  std::map<std::string, int> fusedOps;
};

/// True when `softmax` feeds a TopK (through casts): a MoE router's, whose
/// reason is the TopK's, not an attention's.
bool isRouter(Operation *softmax) {
  for (Operation *u : softmax->getUsers()) {
    if (isa<TopKOp>(u))
      return true;
    if (isa<CastOp>(u) && isRouter(u))
      return true;
  }
  // A softmax over the picked logits (routing after the selection).
  Value in = softmax->getOperand(0);
  while (auto c = in.getDefiningOp<CastOp>())
    in = c.getInput();
  return isa_and_nonnull<TopKOp>(in.getDefiningOp());
}

std::string reasonsFor(const FailureLog &failures, const std::string &node,
                       llvm::StringRef prefix = "") {
  auto it = failures.find(node);
  if (it == failures.end() || it->second.empty())
    return node + ": no pattern recognized it";
  std::string out;
  for (const std::string &r : it->second)
    if (prefix.empty() || llvm::StringRef(r).starts_with(prefix))
      out += (out.empty() ? "" : "; ") + r;
  return node + ": " + (out.empty() ? it->second.back() : out);
}

bool hasReason(const FailureLog &failures, const std::string &node, llvm::StringRef prefix) {
  auto it = failures.find(node);
  return it != failures.end() && llvm::any_of(it->second, [&](const std::string &r) {
           return llvm::StringRef(r).starts_with(prefix);
         });
}

std::string partCell(const Part &p, const char *what) {
  if (p.fused == 0 && p.unfused.empty())
    return std::string("no ") + what;
  if (p.unfused.empty())
    return llvm::formatv("fused x{0}", p.fused).str();
  return llvm::formatv("{0} fused, {1} not", p.fused, p.unfused.size()).str();
}

/// True when `op`'s result reaches a Softmax through at most a few
/// elementwise ops: an activation inside attention scores (Gemma 2's
/// soft-cap Tanh), which the Softmax's own reason covers, not an MLP's.
bool feedsSoftmax(Operation *op, int depth = 4) {
  for (Operation *user : op->getUsers()) {
    if (isa<SoftmaxOp>(user))
      return true;
    if (depth > 0 && isa<MulOp, DivOp, AddOp, WhereOp, CastOp>(user) &&
        feedsSoftmax(user, depth - 1))
      return true;
  }
  return false;
}

/// A per-token gate: sigmoid of a one-column projection (Qwen2-MoE's
/// shared_expert_gate, [T, H] @ [H, 1]) that scales a value. No MLP pattern
/// holds it, and nothing is left unfused by keeping it as it is.
bool isTokenGate(Operation *op) {
  auto sig = dyn_cast<SigmoidOp>(op);
  if (!sig)
    return false;
  auto linear = sig.getX().getDefiningOp<LinearOp>();
  auto type = dyn_cast<RankedTensorType>(sig.getY().getType());
  if (!linear || linear.getActivation() != "none" || !type || type.getRank() == 0 ||
      type.getShape().back() != 1)
    return false;
  return llvm::all_of(op->getUsers(), [](Operation *u) { return isa<MulOp>(u); });
}

} // namespace

int layerOfName(llvm::StringRef name) {
  static const llvm::Regex re("(^|[/._])(layers|layer|h|blocks|block)[./_]([0-9]+)([/._]|$)");
  llvm::SmallVector<llvm::StringRef, 5> m;
  if (!re.match(name, &m))
    return -1;
  int n = -1;
  if (m[3].getAsInteger(10, n))
    return -1;
  return n;
}

/// Layers by op order, for graphs whose node names carry no layer index
/// (e.g. the dynamo exporter without its name-scope metadata): a layer ends
/// after its MLP, so the next attention starts the next one. The last
/// layer's trailing ops (the final norm, the LM head) stay in it.
llvm::DenseMap<Operation *, int> layersByOrder(func::FuncOp func) {
  llvm::DenseMap<Operation *, int> layer;
  int current = 0;
  bool seenAttention = false, seenMlp = false;
  func.walk([&](Operation *op) {
    bool isAttention = isa<AttentionOp, SoftmaxOp>(op);
    bool isMlp =
        (isa<GatedMlpOp, SigmoidOp, ErfOp, TanhOp, ReluOp, GeluOp>(op) && !feedsSoftmax(op)) ||
        (isa<LinearOp>(op) && cast<LinearOp>(op).getActivation() != "none");
    if (isAttention && seenAttention && seenMlp) {
      ++current;
      seenMlp = false;
    }
    seenAttention |= isAttention;
    seenMlp |= isMlp && seenAttention;
    layer[op] = seenAttention || isMlp ? current : -1;
  });
  return layer;
}

InjectionReport buildInjectionReport(func::FuncOp func, const FailureLog &failures) {
  std::map<int, LayerInfo> layers;
  bool named = false;
  // Constants are named after their weights (which may carry the layer even
  // when the nodes do not): only computing ops count.
  func.walk([&](Operation *op) {
    named |= !isa<ConstantOp>(op) && layerOfName(locName(op->getLoc())) >= 0;
  });
  llvm::DenseMap<Operation *, int> byOrder;
  if (!named)
    byOrder = layersByOrder(func);
  func.walk([&](Operation *op) {
    if (isa<ConstantOp>(op))
      return;
    std::string node = locName(op->getLoc());
    LayerInfo &info = layers[named ? layerOfName(node) : byOrder.lookup(op)];
    llvm::StringRef name = op->getName().stripDialect();
    if (isa<AttentionOp, RotaryOp, RmsNormOp, AddRmsNormOp, AddLayerNormOp, LayerNormalizationOp,
            GatedMlpOp, GeluOp, LinearOp, MoeOp>(op))
      ++info.fusedOps[name.str()];
    if (isa<AttentionOp>(op))
      ++info.attention.fused;
    else if (isa<MoeOp>(op)) {
      ++info.mlp.fused;
      ++info.moe;
    } else if (isa<TopKOp>(op))
      info.mlp.unfused.push_back(reasonsFor(failures, node, "moe"));
    else if (isa<SoftmaxOp>(op) && isRouter(op))
      return; // the TopK it feeds gives the reason
    else if (isa<SoftmaxOp>(op))
      info.attention.unfused.push_back(reasonsFor(failures, node, "attention"));
    else if (isa<RmsNormOp, AddRmsNormOp, AddLayerNormOp, LayerNormalizationOp>(op))
      ++info.norms.fused;
    else if (isa<ReduceMeanOp>(op) && !hasReason(failures, node, "variance of a LayerNorm"))
      info.norms.unfused.push_back(reasonsFor(failures, node));
    else if (isa<GatedMlpOp>(op))
      ++info.mlp.fused;
    else if (auto linear = dyn_cast<LinearOp>(op)) {
      if (hasReason(failures, node, "gated MLP"))
        info.mlp.unfused.push_back(reasonsFor(failures, node, "gated MLP"));
      else if (linear.getActivation() != "none")
        ++info.mlp.fused;
    } else if (isa<SigmoidOp, ErfOp, TanhOp, ReluOp, GeluOp>(op) && !feedsSoftmax(op) &&
               !isTokenGate(op))
      info.mlp.unfused.push_back(reasonsFor(failures, node));
  });

  InjectionReport report;
  std::string table;
  llvm::raw_string_ostream os(table);
  os << llvm::formatv("{0,-10} {1,-18} {2,-18} {3,-18}\n", "layer", "attention", "norms", "mlp");
  std::vector<std::string> details;
  for (auto &[index, info] : layers) {
    if (index < 0)
      continue;
    ++report.layers;
    bool ok = info.attention.fused > 0 && info.attention.unfused.empty() && info.norms.fused > 0 &&
              info.norms.unfused.empty() && info.mlp.fused > 0 && info.mlp.unfused.empty();
    report.injectedLayers += ok;
    std::string mlpCell = partCell(info.mlp, "MLP");
    if (info.moe > 0 && info.mlp.unfused.empty())
      mlpCell = info.moe == 1 ? "moe fused" : llvm::formatv("moe fused x{0}", info.moe).str();
    os << llvm::formatv("{0,-10} {1,-18} {2,-18} {3,-18}\n", index,
                        partCell(info.attention, "attention"), partCell(info.norms, "norm"),
                        mlpCell);
    auto note = [&](const Part &p, const char *what) {
      std::string line = llvm::formatv("layer {0}: {1} not fused", index, what).str();
      if (p.fused == 0 && p.unfused.empty())
        line += " (none found in this layer)";
      for (const std::string &u : p.unfused)
        line += " (" + u + ")";
      if (p.fused == 0 || !p.unfused.empty())
        report.missing.push_back(line);
    };
    note(info.attention, "attention");
    note(info.norms, "norm");
    note(info.mlp, info.moe > 0 || llvm::any_of(info.mlp.unfused, [](const std::string &u) {
      return llvm::StringRef(u).contains(": moe: ");
    }) ? "MoE" : "MLP");
  }
  std::string text = llvm::formatv("kernel injection: {0} of {1} layers fully injected\n",
                                   report.injectedLayers, report.layers)
                         .str();
  if (report.layers == 0)
    text += "no transformer layers found (no attention, and no node names like layers.N)\n";
  else if (!named)
    text += "node names carry no layer index: layers are counted by op order\n";
  text += table;
  std::map<std::string, int> totals;
  for (auto &[index, info] : layers)
    for (auto &[op, n] : info.fusedOps)
      totals[op] += n;
  text += "fused ops:";
  if (totals.empty())
    text += " none";
  for (auto &[op, n] : totals)
    text += llvm::formatv(" {0} x{1},", op, n).str();
  if (!totals.empty())
    text.pop_back();
  text += "\n";
  auto outside = layers.find(-1);
  if (outside != layers.end())
    for (const std::string &u : outside->second.norms.unfused)
      text += "outside layers, norm not fused: " + u + "\n";
  for (const std::string &m : report.missing)
    text += m + "\n";
  report.text = std::move(text);
  return report;
}

} // namespace kiln::inject
