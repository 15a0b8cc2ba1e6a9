//===- OnnxImporter.h - ONNX model -> kiln dialect ---------------*- C++ -*-===//
//
// The import phase: reads an ONNX ModelProto (with external data) and builds a
// module holding one `func.func @main` of kiln ops.
//
// What the module looks like:
//
//   module attributes {kiln.opset = 17 : i64, kiln.ir_version = 8 : i64,
//                      kiln.producer_name = "pytorch", kiln.producer_version = "2.1",
//                      kiln.graph_name = "main_graph", kiln.metadata = {key = "value"}} {
//     func.func @main(%arg0: tensor<?x?xi64> {kiln.name = "input_ids",
//                                             kiln.dims = ["batch_size", "sequence_length"]})
//         -> (tensor<?x?x50257xf32> {kiln.name = "logits",
//                                     kiln.dims = ["batch_size", "sequence_length", ""]}) {
//       %w = kiln.constant {name = "wte"} dense_resource<wte> : tensor<50257x768xf32>
//       ...
//     }
//   }
//
// - Graph inputs (minus those that are also initializers) are the arguments,
//   in ONNX order; graph outputs are the results, in ONNX order. `kiln.name`
//   is the ONNX name; `kiln.dims` has one string per dim: the ONNX dim_param
//   (symbolic name) or "" for a static or unnamed dim. For results the
//   declared dim_param wins, else the importer's symbolic inference names it.
// - Initializers and Constant nodes are `kiln.constant` ops (named by the
//   initializer or the Constant's output). Tensors of at most
//   `maxInlineElements` elements are DenseElementsAttr (folders read them);
//   larger ones are DenseResourceElementsAttr whose blob points at the
//   bytes in the parsed protobuf or the memory-mapped external-data file,
//   kept alive by the blob itself, so weights are never copied. Bool tensors
//   are always DenseElementsAttr (i1 storage is bit-packed: read them with
//   getValues<bool>()).
// - Every op's location is NameLoc(ONNX node name), or NameLoc("OpType_i")
//   (i = the node's index) for unnamed nodes.
// - Result types are inferred while importing (static where the inputs
//   allow); the cleanup phase refines them further.
//
// Errors never abort: each is emitted as an MLIR diagnostic (at the node's
// location) whose message names the node, its op type and the model's
// opset, e.g. "node 'Foo_3' (Foo, opset 17): unsupported op 'Foo'".
// Unsupported opsets read "unsupported opset 12 for domain ''...".
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORTER_ONNXIMPORTER_H
#define KILN_COMPILER_IMPORTER_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// The default-domain opsets the importer accepts. A model exported at an
/// older opset is accepted too when every op it uses is unchanged between
/// its opset and kMinOnnxOpset (so it already has the supported semantics);
/// otherwise the error reads "unsupported opset N for domain ''".
inline constexpr int64_t kMinOnnxOpset = 13;
inline constexpr int64_t kMaxOnnxOpset = 21;

struct OnnxImportOptions {
  /// Tensors with more elements than this become DenseResourceElementsAttr
  /// weights aliasing the model's bytes; smaller ones DenseElementsAttr.
  int64_t maxInlineElements = 1024;
};

/// A graph input or output as the ONNX file declares it.
struct OnnxValueInfo {
  std::string name;
  /// The MLIR spelling of the element type ("f32", "i64", ...), or the
  /// ONNX type name when kiln does not support it.
  std::string elementType;
  /// Static dims, -1 for a dynamic one; empty with `ranked` false when the
  /// file declares no shape.
  std::vector<int64_t> shape;
  bool ranked = false;
  /// One per dim: the dim_param, or "".
  std::vector<std::string> dims;
};

/// A model's metadata, readable without importing its graph.
struct OnnxModelInfo {
  int64_t irVersion = 0;
  /// The default domain's opset.
  int64_t opset = 0;
  /// Every (domain, version) opset import, in file order.
  std::vector<std::pair<std::string, int64_t>> opsetImports;
  std::string producerName;
  std::string producerVersion;
  std::string graphName;
  std::vector<OnnxValueInfo> inputs;
  std::vector<OnnxValueInfo> outputs;
  /// metadata_props, in file order.
  std::vector<std::pair<std::string, std::string>> metadata;
};

/// Reads the model at `path` and returns its metadata. Fails (setting
/// `error` when non-null) on an unreadable or corrupt file. Initializer
/// data is not validated and external data is not opened.
mlir::FailureOr<OnnxModelInfo> readOnnxModelInfo(llvm::StringRef path, std::string *error);

/// Imports the model at `path` (external data relative to its directory)
/// into a new module in `context`, loading the dialects it needs. On
/// failure returns failure(); with `error` non-null the diagnostics are
/// captured into it (one per line) instead of reaching the context's
/// handler.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnxModel(mlir::MLIRContext &context, llvm::StringRef path, std::string *error,
                const OnnxImportOptions &options = {});

} // namespace kiln

#endif // KILN_COMPILER_IMPORTER_ONNXIMPORTER_H
