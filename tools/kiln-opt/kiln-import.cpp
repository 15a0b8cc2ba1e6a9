//===- kiln-import.cpp - print the kiln IR of an ONNX model ---------------===//
//
// kiln-import model.onnx [-o out.mlir] [--cleanup] [--max-inline-elements N]
// kiln-import model.onnx --print-info
//
// Imports the model (the import phase of `kiln build`) and prints the module,
// optionally after the kiln-cleanup pipeline; or prints only the metadata
// readOnnxModelInfo() extracts. Errors go to stderr with the
// node's name, op type and opset, and the exit code is 1. The lit tests of
// the importer use it; MLIR's printing flags (e.g.
// --mlir-elide-resource-strings-if-larger=16) apply.
//
//===----------------------------------------------------------------------===//

#include "compiler/importer/OnnxImporter.h"
#include "passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;

/// One line per fact, for lit tests of readOnnxModelInfo().
static int printModelInfo(llvm::StringRef path) {
  std::string error;
  mlir::FailureOr<kiln::OnnxModelInfo> info = kiln::readOnnxModelInfo(path, &error);
  if (mlir::failed(info)) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  llvm::raw_ostream &os = llvm::outs();
  os << "ir_version " << info->irVersion << "\nopset " << info->opset << "\n";
  for (const auto &[domain, version] : info->opsetImports)
    os << "opset_import '" << domain << "' " << version << "\n";
  os << "producer " << info->producerName << " " << info->producerVersion << "\n";
  os << "graph " << info->graphName << "\n";
  auto printValue = [&](llvm::StringRef kind, const kiln::OnnxValueInfo &v) {
    os << kind << " " << v.name << " " << v.elementType;
    if (v.ranked)
      for (auto [dim, name] : llvm::zip(v.shape, v.dims))
        os << " " << (name.empty() ? std::to_string(dim) : name);
    os << "\n";
  };
  for (const kiln::OnnxValueInfo &v : info->inputs)
    printValue("input", v);
  for (const kiln::OnnxValueInfo &v : info->outputs)
    printValue("output", v);
  for (const auto &[key, value] : info->metadata)
    os << "metadata " << key << " = " << value << "\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  static cl::opt<std::string> input(cl::Positional, cl::desc("<model.onnx>"), cl::Required);
  static cl::opt<std::string> output("o", cl::desc("Output file (default: stdout)"), cl::init("-"));
  static cl::opt<bool> cleanup("cleanup", cl::desc("Run the kiln-cleanup pipeline"));
  static cl::opt<int64_t> maxInline(
      "max-inline-elements",
      cl::desc("Largest tensor kept as a DenseElementsAttr (larger: dense_resource)"),
      cl::init(kiln::OnnxImportOptions().maxInlineElements));
  static cl::opt<bool> printInfo("print-info",
                                 cl::desc("Print the model's metadata instead of its IR"));
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "kiln ONNX importer\n");

  if (printInfo)
    return printModelInfo(input);

  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  kiln::OnnxImportOptions options;
  options.maxInlineElements = maxInline;
  auto module = kiln::importOnnxModel(context, input, /*error=*/nullptr, options);
  if (mlir::failed(module))
    return 1;
  if (cleanup) {
    mlir::PassManager pm(&context);
    if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
      return 1;
    kiln::buildCleanupPipeline(pm);
    if (mlir::failed(pm.run(**module)))
      return 1;
  }
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out = mlir::openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << error << "\n";
    return 1;
  }
  (*module)->print(out->os(), mlir::OpPrintingFlags());
  out->os() << "\n";
  out->keep();
  return 0;
}
