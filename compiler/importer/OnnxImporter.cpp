//===- OnnxImporter.cpp - the importer's public entry points --------------===//

#include "compiler/importer/OnnxImporter.h"

#include "compiler/dialect/KilnDialect.h"
#include "compiler/importer/GraphImporter.h"
#include "compiler/importer/ModelLoader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"

#include <onnx/onnx_pb.h>

using namespace mlir;

namespace kiln {

FailureOr<OnnxModelInfo> readOnnxModelInfo(llvm::StringRef path, std::string *error) {
  std::string message;
  std::shared_ptr<onnx::ModelProto> model = onnx_import::parseModelFile(path, message);
  if (!model) {
    if (error)
      *error = message;
    return failure();
  }
  return onnx_import::extractModelInfo(*model);
}

FailureOr<OwningOpRef<ModuleOp>> importOnnxModel(MLIRContext &context, llvm::StringRef path,
                                                 std::string *error,
                                                 const OnnxImportOptions &options) {
  context.getOrLoadDialect<KilnDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
  // With `error`, diagnostics are collected there instead of going to the
  // context's handler (the kiln tool prints them its own way).
  std::optional<ScopedDiagnosticHandler> capture;
  if (error) {
    error->clear();
    capture.emplace(&context, [error](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Error)
        return success();
      if (!error->empty())
        *error += "\n";
      *error += diag.str();
      return success();
    });
  }
  std::string message;
  std::shared_ptr<onnx::ModelProto> model = onnx_import::parseModelFile(path, message);
  if (!model) {
    emitError(FileLineColLoc::get(&context, path, 0, 0)) << message;
    return failure();
  }
  onnx_import::GraphImporter importer(&context, model, path, options);
  return importer.run();
}

} // namespace kiln
