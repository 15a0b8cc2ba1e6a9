//===- SourceGraph.cpp - the unpartitioned module stored in a plan --------===//

#include "compiler/plan/SourceGraph.h"

#include "compiler/dialect/KilnDialect.h"
#include "compiler/dialect/KilnOps.h"
#include "compiler/plan/PlanAttrs.h"
#include "compiler/support/BuildError.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

namespace kiln::plan {
namespace {

using compiler::inputError;
using compiler::internalError;

/// The weight constants whose bytes live outside the module (resources).
llvm::SmallVector<ConstantOp> resourceWeights(mlir::ModuleOp module) {
  llvm::SmallVector<ConstantOp> out;
  module.walk([&](ConstantOp c) {
    if (mlir::isa<mlir::DenseResourceElementsAttr>(c.getValue()))
      out.push_back(c);
  });
  return out;
}

} // namespace

void nameWeights(mlir::ModuleOp module) {
  llvm::StringSet<> taken;
  mlir::Builder b(module.getContext());
  for (ConstantOp c : resourceWeights(module)) {
    std::string name;
    if (auto n = c.getNameAttr())
      name = n.str();
    if (name.empty())
      name = nodeName(c.getLoc());
    if (name.empty())
      name = "weight";
    std::string unique = name;
    for (int k = 2; taken.contains(unique); ++k)
      unique = name + "." + std::to_string(k);
    taken.insert(unique);
    if (!c.getNameAttr() || c.getNameAttr().getValue() != unique)
      c.setNameAttr(b.getStringAttr(unique));
  }
}

llvm::Expected<std::string> writeSourceGraph(mlir::ModuleOp module) {
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  mlir::BytecodeWriterConfig config;
  config.setElideResourceDataFlag(true);
  if (mlir::failed(mlir::writeBytecodeToFile(module, os, config)))
    return internalError("writing the source graph as MLIR bytecode failed");
  os.flush();
  return bytes;
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
readSourceGraph(mlir::MLIRContext &context, llvm::StringRef bytes, const WeightLookup &lookup) {
  context.getOrLoadDialect<KilnDialect>();
  context.getOrLoadDialect<mlir::func::FuncDialect>();
  std::string parseError;
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(bytes, "the plan's source graph"), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    mlir::ScopedDiagnosticHandler capture(&context, [&](mlir::Diagnostic &d) {
      parseError += (parseError.empty() ? "" : "; ") + d.str();
      return mlir::success();
    });
    mlir::ParserConfig config(&context);
    module = mlir::parseSourceFile<mlir::ModuleOp>(sources, config);
  }
  if (!module)
    return inputError("the plan's source graph cannot be read" +
                      (parseError.empty() ? std::string() : ": " + parseError));
  for (ConstantOp c : resourceWeights(*module)) {
    auto resource = mlir::cast<mlir::DenseResourceElementsAttr>(c.getValue());
    const std::string name = c.getNameAttr() ? c.getNameAttr().str() : "";
    auto found = lookup(name);
    if (!found) {
      if (c->use_empty()) {
        llvm::consumeError(found.takeError());
        c->erase();
        continue;
      }
      return found.takeError();
    }
    auto type = mlir::cast<mlir::RankedTensorType>(resource.getType());
    const uint64_t want = static_cast<uint64_t>(type.getNumElements()) *
                          static_cast<uint64_t>(elementBytes(type.getElementType()));
    if (found->size != want)
      return inputError("weight '" + name + "' has " + llvm::Twine(found->size) +
                        " bytes in the plan, but the source graph's type needs " +
                        llvm::Twine(want));
    auto *entry = resource.getRawHandle().getResource();
    entry->setBlob(mlir::UnmanagedAsmResourceBlob::allocateInferAlign(
        llvm::ArrayRef<char>(static_cast<const char *>(found->data), found->size)));
  }
  return module;
}

} // namespace kiln::plan
