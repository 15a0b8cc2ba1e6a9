//===- UserPatterns.cpp - kiln-user-patterns: PDL patterns from a file ----===//
//
// Lets a user add rewrite patterns without rebuilding kiln: the file's
// pdl.pattern ops become a PDLPatternModule (compiled to the PDL bytecode
// interpreter by FrozenRewritePatternSet) and run with the greedy driver.
// The contract is in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/PDL/IR/PDL.h"
#include "mlir/Dialect/PDL/IR/PDLOps.h"
#include "mlir/Dialect/PDLInterp/IR/PDLInterp.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/SourceMgr.h"

namespace kiln {

#define GEN_PASS_DEF_KILNUSERPATTERNS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

/// Counts the ops the user's patterns replaced or erased.
struct RewriteCounter : RewriterBase::Listener {
  void notifyOperationReplaced(Operation *, ValueRange) override { ++count; }
  void notifyOperationErased(Operation *) override {}
  int64_t count = 0;
};

struct UserPatternsPass : impl::KilnUserPatternsBase<UserPatternsPass> {
  using KilnUserPatternsBase::KilnUserPatternsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (patternsFile.empty()) {
      module.emitError("kiln-user-patterns needs patterns-file=PATH");
      return signalPassFailure();
    }
    llvm::SourceMgr sources;
    std::string error;
    auto buffer = mlir::openInputFile(patternsFile, &error);
    if (!buffer) {
      module.emitError() << "cannot read the patterns file '" << patternsFile << "': " << error;
      return signalPassFailure();
    }
    sources.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    OwningOpRef<ModuleOp> patterns = parseSourceFile<ModuleOp>(sources, ctx);
    if (!patterns) {
      module.emitError() << "the patterns file '" << patternsFile
                         << "' is not valid MLIR (see above); it must hold pdl.pattern ops, "
                            "e.g. from `mlir-pdll-19 FILE.pdll -x=mlir`";
      return signalPassFailure();
    }
    int64_t count = 0;
    patterns->walk([&](pdl::PatternOp) { ++count; });
    if (count == 0) {
      module.emitError() << "the patterns file '" << patternsFile << "' holds no pdl.pattern";
      return signalPassFailure();
    }
    RewritePatternSet set(ctx);
    set.add(PDLPatternModule(std::move(patterns)));
    FrozenRewritePatternSet frozen(std::move(set));
    RewriteCounter counter;
    GreedyRewriteConfig config;
    config.listener = &counter;
    for (func::FuncOp func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        (void)applyPatternsAndFoldGreedily(func, frozen, config);
    module->setAttr("kiln.user_pattern_rewrites",
                    IntegerAttr::get(IntegerType::get(ctx, 64), counter.count));
  }
};

} // namespace
} // namespace kiln
