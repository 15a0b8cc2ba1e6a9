//===- SiluTanhPlugin.cpp - an example kiln pass plugin -------------------===//
//
// A worked example of teaching kiln a new spelling without rebuilding it
// (docs/injection.md). Some models write SiLU through the identity
// sigmoid(x) = 0.5 + 0.5 * tanh(x / 2):
//
//   x * (0.5 + 0.5 * tanh(x / 2))    ->    x * sigmoid(x)
//
// kiln-inject does not know the left side, but it folds the right side into
// the projection that feeds it and then into the gated MLP. Load with
//
//   kiln build model.onnx -o model.plan --pass-plugin libKilnExampleSiluTanh.so
//
// kiln runs the pass named after the plugin ("kiln-example-silu-tanh")
// before kiln-inject. The plugin uses only MLIR's generic op API and kiln's
// op names, so it does not link kiln's compiler library (whose dialect the
// kiln binary already holds).
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Config/llvm-config.h"

#include <cmath>

using namespace mlir;

namespace {

constexpr const char *kPluginName = "kiln-example-silu-tanh";

/// The value of a one-element float constant (kiln.constant is ConstantLike).
bool isScalar(Value v, double want) {
  Attribute attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return false;
  auto dense = dyn_cast<DenseFPElementsAttr>(attr);
  return dense && dense.getNumElements() == 1 &&
         std::fabs((*dense.getValues<APFloat>().begin()).convertToDouble() - want) < 1e-6;
}

Operation *defOf(Value v, StringRef name) {
  Operation *op = v.getDefiningOp();
  return op && op->getName().getStringRef() == name ? op : nullptr;
}

/// The operand of a binary `op` that is not `known`, or null.
Value other(Operation *op, Value known) {
  if (op->getNumOperands() != 2)
    return nullptr;
  return op->getOperand(0) == known   ? op->getOperand(1)
         : op->getOperand(1) == known ? op->getOperand(0)
                                      : nullptr;
}

/// kiln.mul(x, kiln.add(0.5, kiln.mul(0.5, kiln.tanh(kiln.div(x, 2)))))
struct SiluAsTanh : RewritePattern {
  explicit SiluAsTanh(MLIRContext *ctx) : RewritePattern("kiln.mul", 1, ctx) {}

  LogicalResult matchAndRewrite(Operation *mul, PatternRewriter &rewriter) const override {
    for (Value x : mul->getOperands()) {
      Operation *add = defOf(other(mul, x), "kiln.add");
      if (!add)
        continue;
      for (Value half : add->getOperands()) {
        if (!isScalar(half, 0.5))
          continue;
        Operation *scaled = defOf(other(add, half), "kiln.mul");
        if (!scaled)
          continue;
        for (Value t : scaled->getOperands()) {
          Operation *tanh = defOf(t, "kiln.tanh");
          if (!tanh || !isScalar(other(scaled, t), 0.5))
            continue;
          Operation *div = defOf(tanh->getOperand(0), "kiln.div");
          if (!div || div->getOperand(0) != x || !isScalar(div->getOperand(1), 2.0))
            continue;
          OperationState sigmoid(mul->getLoc(), "kiln.sigmoid");
          sigmoid.addOperands(x);
          sigmoid.addTypes(x.getType());
          Operation *sig = rewriter.create(sigmoid);
          OperationState product(mul->getLoc(), "kiln.mul");
          product.addOperands({x, sig->getResult(0)});
          product.addTypes(mul->getResult(0).getType());
          rewriter.replaceOp(mul, rewriter.create(product)->getResults());
          return success();
        }
      }
    }
    return rewriter.notifyMatchFailure(mul, "not x * (0.5 + 0.5 * tanh(x / 2))");
  }
};

struct SiluTanhPass : PassWrapper<SiluTanhPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SiluTanhPass)
  StringRef getArgument() const override { return kPluginName; }
  StringRef getDescription() const override {
    return "Rewrite x * (0.5 + 0.5 * tanh(x / 2)) as x * sigmoid(x) (SiLU)";
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SiluAsTanh>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, kPluginName, LLVM_VERSION_STRING,
          [] { PassRegistration<SiluTanhPass>(); }};
}
