//===- GraphImporter.h - ONNX graph -> func.func ----------------*- C++ -*-===//
//
// Internal to the importer. GraphImporter walks a parsed model's graph;
// NodeContext is what each op's import handler (NodeImporter.cpp) sees of
// one node: its inputs, typed attribute access with ONNX defaults, a builder
// that records the ops it creates, and error reporting that names the node.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORTER_GRAPHIMPORTER_H
#define KILN_COMPILER_IMPORTER_GRAPHIMPORTER_H

#include "compiler/dialect/KilnOps.h"
#include "compiler/importer/OnnxImporter.h"
#include "compiler/importer/TensorImport.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include <memory>
#include <optional>
#include <string>

namespace onnx {
class AttributeProto;
class ModelProto;
class NodeProto;
} // namespace onnx

namespace kiln::onnx_import {

/// One node being imported.
class NodeContext {
public:
  NodeContext(const onnx::NodeProto &node, llvm::StringRef name, int64_t opset, mlir::Location loc,
              mlir::OpBuilder &builder, TensorImporter &tensors)
      : node(node), name(name), opset(opset), loc(loc), builder(builder), tensors(tensors) {}

  const onnx::NodeProto &node;
  /// The node's name, or "OpType_index" when it has none.
  std::string name;
  int64_t opset;
  mlir::Location loc;
  mlir::OpBuilder &builder;
  TensorImporter &tensors;
  /// ONNX inputs in order; null for an omitted optional input ("").
  llvm::SmallVector<mlir::Value> inputs;
  /// Every op the handler created, in order; the importer infers their
  /// shapes and verifies them.
  llvm::SmallVector<mlir::Operation *> created;

  /// An error at the node: "node 'name' (OpType, opset N): " + what follows.
  mlir::InFlightDiagnostic error();

  /// Input i, or null when omitted or beyond the node's inputs.
  mlir::Value input(unsigned i) const { return i < inputs.size() ? inputs[i] : mlir::Value(); }
  /// Fails unless the node has between min and max inputs, the first `min`
  /// of them present.
  mlir::LogicalResult expectInputs(unsigned min, unsigned max);

  /// Attribute access. A missing attribute takes `defaultValue`; without one
  /// it is an error. A wrongly typed attribute is an error.
  const onnx::AttributeProto *findAttr(llvm::StringRef attrName) const;
  mlir::FailureOr<int64_t> intAttr(llvm::StringRef attrName,
                                   std::optional<int64_t> defaultValue = std::nullopt);
  mlir::FailureOr<float> floatAttr(llvm::StringRef attrName,
                                   std::optional<float> defaultValue = std::nullopt);
  mlir::FailureOr<std::string>
  stringAttr(llvm::StringRef attrName, std::optional<llvm::StringRef> defaultValue = std::nullopt);
  /// nullopt when absent.
  mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>> intsAttr(llvm::StringRef attrName);

  /// Creates an op with placeholder result types (the importer infers the
  /// real ones) and records it.
  template <typename OpT, typename... Args>
  OpT create(unsigned numResults, mlir::Type elementType, Args &&...args) {
    llvm::SmallVector<mlir::Type> types(numResults, placeholder(elementType));
    auto op = builder.create<OpT>(loc, mlir::TypeRange(types), std::forward<Args>(args)...);
    created.push_back(op);
    return op;
  }
  /// A 1-D i64 constant (a 0-D one with `scalar`), e.g. for upgraded axes.
  mlir::Value constI64(llvm::ArrayRef<int64_t> values, bool scalar = false);
  /// A constant holding `value`, named `constantName` when not empty.
  mlir::Value constant(mlir::ElementsAttr value, llvm::StringRef constantName = "");
  mlir::Type placeholder(mlir::Type elementType) const {
    return mlir::UnrankedTensorType::get(elementType);
  }
  mlir::Type f32() const { return builder.getF32Type(); }
};

using NodeHandler = mlir::FailureOr<llvm::SmallVector<mlir::Value>> (*)(NodeContext &);

/// The handler for an ONNX op type of the default domain, or null when kiln
/// does not support it (NodeImporter.cpp).
NodeHandler lookupNodeHandler(llvm::StringRef opType);

/// Imports one parsed model into a module.
class GraphImporter {
public:
  GraphImporter(mlir::MLIRContext *context, std::shared_ptr<const onnx::ModelProto> model,
                llvm::StringRef path, const OnnxImportOptions &options);

  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> run();

private:
  mlir::LogicalResult importNode(const onnx::NodeProto &node, int index);
  mlir::Location nodeLoc(const onnx::NodeProto &node, int index, std::string &name);
  mlir::InFlightDiagnostic graphError();

  mlir::MLIRContext *context;
  std::shared_ptr<const onnx::ModelProto> model;
  std::string path;
  OnnxImportOptions options;
  int64_t opset = 0;
  mlir::OpBuilder builder;
  std::unique_ptr<TensorImporter> tensors;
  llvm::StringMap<mlir::Value> values;
  ShapeInferenceContext shapes;
};

} // namespace kiln::onnx_import

#endif // KILN_COMPILER_IMPORTER_GRAPHIMPORTER_H
