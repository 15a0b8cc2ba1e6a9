//===- ModelLoader.cpp - parse ONNX files, read their metadata ------------===//

#include "compiler/importer/ModelLoader.h"

#include "compiler/importer/EmbeddedWeights.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_set>

using namespace mlir;

namespace kiln::onnx_import {

/// Embedded initializers at least this large are served from the file;
/// smaller ones are not worth a mapping.
constexpr uint64_t kMinMovedBytes = 64 * 1024;

std::shared_ptr<onnx::ModelProto> parseModelFile(llvm::StringRef path, std::string &error) {
  // Read through a plain file stream, not a mapping: the weights embedded in
  // the model then live once, in the parsed message, instead of also as
  // resident file pages while it parses (twice the weights at the peak).
  std::string name = path.str();
  int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    fd = -1;
    errno = EISDIR;
  }
  if (fd < 0) {
    error = "cannot read ONNX model '" + name + "': " + std::strerror(errno);
    return nullptr;
  }
  if (uint64_t(st.st_size) > uint64_t(INT_MAX)) {
    ::close(fd);
    error = "ONNX model '" + name + "' is " + std::to_string(st.st_size) +
            " bytes; protobuf files stop at 2 GB, so larger models must keep their weights "
            "in external data";
    return nullptr;
  }
  auto model = std::make_shared<onnx::ModelProto>();
  bool parsed = false;
  {
    // A CodedInputStream with the total-bytes limit at the file's size: the
    // default limit of older protobuf releases (64 MB) rejects ordinary
    // models with embedded weights, and with a limit below INT_MAX protobuf
    // reserves each bytes field at its size instead of growing it (which
    // would hold up to twice the largest weight while parsing).
    google::protobuf::io::FileInputStream raw(fd, 1 << 20);
    google::protobuf::io::CodedInputStream coded(&raw);
    coded.SetTotalBytesLimit(static_cast<int>(st.st_size));
    parsed = model->ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  }
  ::close(fd);
  if (!parsed) {
    error = "'" + name +
            "' is not a valid ONNX model (the protobuf does not parse; is "
            "the file truncated or corrupt?)";
    return nullptr;
  }
  if (!model->has_graph()) {
    error = "'" + name + "' is not a valid ONNX model (it has no graph)";
    return nullptr;
  }
  // Large embedded weights are served from the file from here on, so the
  // message stops holding a copy of them (EmbeddedWeights.h).
  moveEmbeddedWeightsToFile(*model, path, kMinMovedBytes);
  return model;
}

std::optional<int64_t> getSupportedOpset(const onnx::ModelProto &model, std::string &error) {
  std::optional<int64_t> opset;
  for (const onnx::OperatorSetIdProto &id : model.opset_import())
    if (id.domain().empty() || id.domain() == "ai.onnx")
      opset = id.version();
  if (!opset) {
    error = "the model imports no opset for domain '' (ai.onnx)";
    return std::nullopt;
  }
  std::string supported =
      "kiln supports " + std::to_string(kMinOnnxOpset) + " to " + std::to_string(kMaxOnnxOpset);
  if (*opset > kMaxOnnxOpset || *opset < 1) {
    error = "unsupported opset " + std::to_string(*opset) + " for domain ''; " + supported;
    return std::nullopt;
  }
  if (*opset >= kMinOnnxOpset)
    return opset;
  // An older model is still exact when every op it uses is unchanged between
  // its opset and the oldest supported one: then its ops are the very
  // versions kiln implements (ONNX's own node tests of And, Not, Range, ...
  // are written that way).
  for (const auto &[index, node] : llvm::enumerate(model.graph().node())) {
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      continue;
    const onnx::OpSchema *then = onnx::OpSchemaRegistry::Schema(node.op_type(), int(*opset));
    const onnx::OpSchema *now = onnx::OpSchemaRegistry::Schema(node.op_type(), kMinOnnxOpset);
    if (!then || !now || then->SinceVersion() != now->SinceVersion()) {
      std::string name =
          node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
      error = "unsupported opset " + std::to_string(*opset) + " for domain '': node '" + name +
              "' (" + node.op_type() + ") changed after opset " + std::to_string(*opset) + "; " +
              supported;
      return std::nullopt;
    }
  }
  return opset;
}

Type getElementType(MLIRContext *context, int32_t onnxType) {
  Builder b(context);
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::INT8:
    return b.getIntegerType(8);
  case onnx::TensorProto::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case onnx::TensorProto::INT32:
    return b.getI32Type();
  case onnx::TensorProto::INT64:
    return b.getI64Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  default:
    return Type();
  }
}

std::string onnxTypeName(int32_t onnxType) {
  if (onnx::TensorProto::DataType_IsValid(onnxType))
    return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(onnxType));
  return "type " + std::to_string(onnxType);
}

/// The MLIR spelling of a supported ONNX type, else its ONNX name.
static std::string mlirTypeName(int32_t onnxType) {
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return "f32";
  case onnx::TensorProto::FLOAT16:
    return "f16";
  case onnx::TensorProto::BFLOAT16:
    return "bf16";
  case onnx::TensorProto::DOUBLE:
    return "f64";
  case onnx::TensorProto::INT8:
    return "i8";
  case onnx::TensorProto::UINT8:
    return "ui8";
  case onnx::TensorProto::INT32:
    return "i32";
  case onnx::TensorProto::INT64:
    return "i64";
  case onnx::TensorProto::BOOL:
    return "i1";
  default:
    return onnxTypeName(onnxType);
  }
}

static OnnxValueInfo valueInfo(const onnx::ValueInfoProto &value) {
  OnnxValueInfo info;
  info.name = value.name();
  if (!value.type().has_tensor_type())
    return info;
  const onnx::TypeProto::Tensor &tensor = value.type().tensor_type();
  info.elementType = mlirTypeName(tensor.elem_type());
  if (!tensor.has_shape())
    return info;
  info.ranked = true;
  for (const onnx::TensorShapeProto::Dimension &dim : tensor.shape().dim()) {
    info.shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    info.dims.push_back(dim.has_dim_param() ? dim.dim_param() : "");
  }
  return info;
}

OnnxModelInfo extractModelInfo(const onnx::ModelProto &model) {
  OnnxModelInfo info;
  info.irVersion = model.ir_version();
  for (const onnx::OperatorSetIdProto &id : model.opset_import()) {
    info.opsetImports.emplace_back(id.domain(), id.version());
    if (id.domain().empty() || id.domain() == "ai.onnx")
      info.opset = id.version();
  }
  info.producerName = model.producer_name();
  info.producerVersion = model.producer_version();
  info.graphName = model.graph().name();
  std::unordered_set<std::string> initializers;
  for (const onnx::TensorProto &t : model.graph().initializer())
    initializers.insert(t.name());
  for (const onnx::ValueInfoProto &v : model.graph().input())
    if (!initializers.count(v.name()))
      info.inputs.push_back(valueInfo(v));
  for (const onnx::ValueInfoProto &v : model.graph().output())
    info.outputs.push_back(valueInfo(v));
  for (const onnx::StringStringEntryProto &p : model.metadata_props())
    info.metadata.emplace_back(p.key(), p.value());
  return info;
}

} // namespace kiln::onnx_import
