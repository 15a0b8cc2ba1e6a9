//===- PhaseSupport.cpp - what the build's phases share -------------------===//

#include "compiler/driver/PhaseSupport.h"

#include "compiler/support/BuildError.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace kiln::compiler {

OpCounts countOps(mlir::ModuleOp module) {
  OpCounts c;
  module.walk([&](mlir::Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "kiln")
      ++(plan::isWeightOp(op) ? c.constants : c.ops);
  });
  return c;
}

std::string megabytes(uint64_t bytes) {
  return llvm::formatv("{0:F1} MB", static_cast<double>(bytes) / (1024.0 * 1024.0)).str();
}

mlir::Type dtypeElementType(mlir::MLIRContext &context, const std::string &dtype) {
  mlir::Builder b(&context);
  if (dtype == "fp16")
    return b.getF16Type();
  if (dtype == "bf16")
    return b.getBF16Type();
  return b.getF32Type();
}

llvm::Error checkDtype(mlir::ModuleOp module, const BuildConfig &config) {
  mlir::Type target = dtypeElementType(*module.getContext(), config.dtype);
  std::string found;
  auto check = [&](mlir::Type type) {
    auto shaped = mlir::dyn_cast<mlir::ShapedType>(type);
    if (!shaped || !found.empty())
      return;
    mlir::Type elem = shaped.getElementType();
    if (mlir::isa<mlir::FloatType>(elem) && !elem.isF32() && elem != target) {
      llvm::raw_string_ostream os(found);
      elem.print(os);
    }
  };
  module.walk([&](mlir::Operation *op) {
    if (plan::isWeightOp(op))
      check(op->getResult(0).getType());
    if (auto f = mlir::dyn_cast<mlir::func::FuncOp>(op))
      for (mlir::Type t : f.getArgumentTypes())
        check(t);
  });
  if (found.empty())
    return llvm::Error::success();
  return inputError("dtype: the model has " + found +
                    " weights or inputs but the build config "
                    "asks for " +
                    config.dtype + "; kiln converts only f32 models to another float type");
}

bool hasHalfLogits(mlir::ModuleOp module) {
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!main)
    return false;
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    auto t = mlir::dyn_cast<mlir::TensorType>(main.getResultTypes()[i]);
    auto name = main.getResultAttrOfType<mlir::StringAttr>(i, "kiln.name");
    if (t && (t.getElementType().isF16() || t.getElementType().isBF16()) && name &&
        name.getValue() == "logits")
      return true;
  }
  return false;
}

std::string weightTypes(mlir::ModuleOp module) {
  std::map<std::string, std::pair<int64_t, uint64_t>> byType;
  module.walk([&](mlir::Operation *op) {
    if (!plan::isWeightOp(op))
      return;
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(op->getResult(0).getType());
    if (!type || !type.hasStaticShape())
      return;
    std::string name;
    llvm::raw_string_ostream os(name);
    type.getElementType().print(os);
    auto &[count, bytes] = byType[name];
    ++count;
    bytes += static_cast<uint64_t>(type.getNumElements()) *
             static_cast<uint64_t>(plan::elementBytes(type.getElementType()));
  });
  std::string out;
  for (const auto &[name, cb] : byType)
    out += (out.empty() ? "" : ", ") + name + ": " + std::to_string(cb.first) + " (" +
           megabytes(cb.second) + ")";
  return out;
}

llvm::Error addRegistered(mlir::OpPassManager &pm, llvm::StringRef name,
                          llvm::StringRef options) {
  const mlir::PassRegistryEntry *entry = mlir::PassPipelineInfo::lookup(name);
  if (!entry)
    entry = mlir::PassInfo::lookup(name);
  if (!entry)
    return internalError("the pass '" + name +
                         "' is not registered: call kiln::registerKilnPasses() and "
                         "kiln::registerKilnPipelines() (passes/Passes.h) before runBuild");
  std::string error;
  if (mlir::failed(entry->addToPipeline(pm, options, [&](const llvm::Twine &msg) {
        error = msg.str();
        return mlir::failure();
      })))
    return internalError("adding the pass '" + name + "': " + error);
  return llvm::Error::success();
}

llvm::Expected<std::string> quoteOption(llvm::StringRef flag, llvm::StringRef value) {
  if (!value.contains('"'))
    return ("\"" + value + "\"").str();
  if (!value.contains('\''))
    return ("'" + value + "'").str();
  return inputError(flag + " " + value + ": a path with both ' and \" cannot be passed to a pass");
}

llvm::Error runPasses(mlir::MLIRContext &context, mlir::ModuleOp module,
                      const DiagnosticPrinter &diags, Phase phase,
                      llvm::function_ref<llvm::Error(mlir::PassManager &)> populate) {
  mlir::PassManager pm(&context);
  if (llvm::Error e = populate(pm))
    return e;
  int before = diags.errorCount();
  if (mlir::succeeded(pm.run(module)))
    return llvm::Error::success();
  if (diags.errorCount() > before)
    return inputError(phaseName(phase) + " failed (see above)");
  return internalError(phaseName(phase) + " failed without a diagnostic");
}

} // namespace kiln::compiler
