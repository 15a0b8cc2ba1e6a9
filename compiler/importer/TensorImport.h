//===- TensorImport.h - ONNX TensorProto -> ElementsAttr --------*- C++ -*-===//
//
// Internal to the importer. Turns initializers and Constant values into
// attributes: small tensors are copied into DenseElementsAttr, large ones
// become DenseResourceElementsAttr blobs that alias the protobuf's raw_data
// or a memory-mapped external-data file and keep their owner alive.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORTER_TENSORIMPORT_H
#define KILN_COMPILER_IMPORTER_TENSORIMPORT_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class TensorProto;
} // namespace onnx

namespace kiln::onnx_import {

class TensorImporter {
public:
  /// `model` owns the raw_data that large tensors alias; `modelDir` anchors
  /// external-data locations.
  TensorImporter(mlir::MLIRContext *context, std::shared_ptr<const onnx::ModelProto> model,
                 std::string modelDir, int64_t maxInlineElements);

  /// The tensor's value, or failure with `error` set (the caller adds which
  /// initializer or node it was).
  mlir::FailureOr<mlir::ElementsAttr> importTensor(const onnx::TensorProto &tensor,
                                                   std::string &error);

  /// The external-data files the tensors came from, as their locations
  /// relative to the model's directory, in the order first used.
  const std::vector<std::string> &externalDataFiles() const { return externalFiles; }

private:
  /// The bytes of an external tensor, mapping its file once.
  mlir::FailureOr<llvm::ArrayRef<char>> readExternal(const onnx::TensorProto &tensor,
                                                     uint64_t expectedBytes,
                                                     std::shared_ptr<llvm::MemoryBuffer> &owner,
                                                     std::string &error);

  mlir::MLIRContext *context;
  std::shared_ptr<const onnx::ModelProto> model;
  std::string modelDir;
  int64_t maxInlineElements;
  llvm::StringMap<std::shared_ptr<llvm::MemoryBuffer>> files;
  std::vector<std::string> externalFiles;
};

} // namespace kiln::onnx_import

#endif // KILN_COMPILER_IMPORTER_TENSORIMPORT_H
