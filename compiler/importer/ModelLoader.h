//===- ModelLoader.h - parse ONNX files, read their metadata ----*- C++ -*-===//
//
// Internal to the importer: parsing a ModelProto from disk, checking its
// opset, mapping ONNX element types to MLIR, and extracting metadata.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORTER_MODELLOADER_H
#define KILN_COMPILER_IMPORTER_MODELLOADER_H

#include "compiler/importer/OnnxImporter.h"

#include "mlir/IR/Types.h"

#include <memory>
#include <optional>
#include <string>

namespace onnx {
class ModelProto;
class TypeProto;
} // namespace onnx

namespace kiln::onnx_import {

/// Parses the file at `path` as a ModelProto. Models up to 2 GB parse (the
/// protobuf limit); bigger files must keep weights in external data. Sets
/// `error` and returns null on failure.
std::shared_ptr<onnx::ModelProto> parseModelFile(llvm::StringRef path, std::string &error);

/// The default domain's opset if it is one kiln supports; otherwise sets
/// `error` ("unsupported opset N for domain ''").
std::optional<int64_t> getSupportedOpset(const onnx::ModelProto &model, std::string &error);

/// The MLIR element type of an ONNX TensorProto::DataType, or null when
/// kiln does not support it.
mlir::Type getElementType(mlir::MLIRContext *context, int32_t onnxType);

/// "FLOAT", "INT64", ... for messages.
std::string onnxTypeName(int32_t onnxType);

/// The metadata of a parsed model (no validation of the graph).
OnnxModelInfo extractModelInfo(const onnx::ModelProto &model);

} // namespace kiln::onnx_import

#endif // KILN_COMPILER_IMPORTER_MODELLOADER_H
