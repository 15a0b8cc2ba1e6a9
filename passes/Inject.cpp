//===- Inject.cpp - kiln-inject: kernel injection -------------------------===//
//
// Runs the injection pattern sets in a fixed order (the contract is in
// Passes.td): each stage is one greedy rewrite, so a later stage sees the
// fused ops of the earlier ones (activations fold into linears that exist,
// the gated MLP takes linears whose activation is folded, and sibling
// projections are fused only once the gate/up pairs are gone). A listener
// records every notifyMatchFailure, keyed by the ONNX node it was rooted
// at, for the report.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"
#include "passes/InjectPatterns.h"
#include "passes/InjectReport.h"
#include "passes/InjectUtils.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {

#define GEN_PASS_DEF_KILNINJECT
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

struct FailureRecorder : RewriterBase::Listener {
  explicit FailureRecorder(inject::FailureLog &log) : log(log) {}
  void notifyMatchFailure(Location loc, function_ref<void(Diagnostic &)> reason) override {
    std::string node = inject::locName(loc);
    if (node.empty())
      return;
    Diagnostic diag(loc, DiagnosticSeverity::Remark);
    reason(diag);
    std::string text = diag.str();
    std::vector<std::string> &reasons = log[node];
    llvm::erase(reasons, text);
    reasons.push_back(std::move(text));
  }
  inject::FailureLog &log;
};

struct InjectPass : impl::KilnInjectBase<InjectPass> {
  using KilnInjectBase::KilnInjectBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    inject::FailureLog failures;
    FailureRecorder recorder(failures);
    SmallVector<std::string> reports, missing;
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      // A stage that does not converge still leaves valid IR; whatever it
      // left unfused shows up in the report.
      auto stage = [&](auto populate) {
        RewritePatternSet patterns(ctx);
        populate(patterns);
        GreedyRewriteConfig config;
        config.listener = &recorder;
        config.useTopDownTraversal = true;
        (void)applyPatternsAndFoldGreedily(func, std::move(patterns), config);
      };
      // Symbolic shapes prove that reshapes only merge and split dims (the
      // dynamo exporter's k^T, the 2-D reshapes around Gemm). Values a stage
      // creates are not in the context, so it is recomputed between stages.
      ShapeInferenceContext shapes;
      if (failed(inferFunctionShapes(func, shapes)))
        return signalPassFailure();
      stage([&](RewritePatternSet &p) {
        inject::populateNormPatterns(p);
        inject::populateExpandedLayerNormPatterns(p);
        inject::populateGeluPatterns(p);
        inject::populateRotaryPatterns(p);
        inject::populateAttentionPatterns(p, &shapes);
      });
      shapes = ShapeInferenceContext();
      if (failed(inferFunctionShapes(func, shapes)))
        return signalPassFailure();
      stage([&](RewritePatternSet &p) { inject::populateLinearPatterns(p, &shapes); });
      stage([](RewritePatternSet &p) { inject::populateActivationPatterns(p); });
      stage([](RewritePatternSet &p) { inject::populateGatedMlpPatterns(p); });
      stage([](RewritePatternSet &p) { inject::populateMoePatterns(p); });
      stage([&](RewritePatternSet &p) {
        if (fuseResidualNorm)
          inject::populateResidualNormPatterns(p);
        if (fuseQkv)
          inject::populateSiblingPatterns(p);
      });
      inject::InjectionReport report = inject::buildInjectionReport(func, failures);
      reports.push_back(report.text);
      missing.append(report.missing.begin(), report.missing.end());
    }
    std::string text;
    for (const std::string &r : reports)
      text += r;
    module->setAttr("kiln.injection_report", StringAttr::get(ctx, text));
    SmallVector<Attribute> missingAttrs;
    for (const std::string &m : missing)
      missingAttrs.push_back(StringAttr::get(ctx, m));
    module->setAttr("kiln.injection_missing", ArrayAttr::get(ctx, missingAttrs));
  }
};

} // namespace
} // namespace kiln
