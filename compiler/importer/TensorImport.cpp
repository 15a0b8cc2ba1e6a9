//===- TensorImport.cpp - ONNX TensorProto -> ElementsAttr ----------------===//

#include "compiler/importer/TensorImport.h"

#include "compiler/importer/EmbeddedWeights.h"
#include "compiler/importer/ModelLoader.h"
#include "compiler/support/SourcePages.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

#include <cstring>

using namespace mlir;

namespace kiln::onnx_import {

TensorImporter::TensorImporter(MLIRContext *context, std::shared_ptr<const onnx::ModelProto> model,
                               std::string modelDir, int64_t maxInlineElements)
    : context(context), model(std::move(model)), modelDir(std::move(modelDir)),
      maxInlineElements(maxInlineElements) {}

/// Bytes per element as stored in raw_data (bool: one byte).
static uint64_t storageBytes(Type elementType) {
  return elementType.isInteger(1) ? 1 : elementType.getIntOrFloatBitWidth() / 8;
}

FailureOr<ArrayRef<char>> TensorImporter::readExternal(const onnx::TensorProto &tensor,
                                                       uint64_t expectedBytes,
                                                       std::shared_ptr<llvm::MemoryBuffer> &owner,
                                                       std::string &error) {
  std::string location;
  bool embedded = false; // the ONNX file itself (EmbeddedWeights.h)
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    unsigned long long value = 0;
    bool isNumber = !llvm::StringRef(entry.value()).getAsInteger(10, value);
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == kEmbeddedKey) {
      embedded = true;
    } else if (entry.key() == "offset" || entry.key() == "length") {
      if (!isNumber) {
        error = "external data " + entry.key() + " '" + entry.value() + "' is not a number";
        return failure();
      }
      (entry.key() == "offset" ? offset : length.emplace()) = value;
    }
  }
  // Locations are relative to the model's directory and may not leave it.
  llvm::StringRef rel(location);
  if (rel.empty() || llvm::sys::path::is_absolute(rel) ||
      llvm::any_of(llvm::make_range(llvm::sys::path::begin(rel), llvm::sys::path::end(rel)),
                   [](llvm::StringRef part) { return part == ".."; })) {
    error = "external data location '" + location +
            "' must be a relative path inside the model's directory";
    return failure();
  }
  llvm::SmallString<256> path(modelDir);
  llvm::sys::path::append(path, rel);
  std::shared_ptr<llvm::MemoryBuffer> &file = files[path];
  if (!file) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!buffer) {
      error = "cannot open external data file '" + std::string(path) +
              "': " + buffer.getError().message();
      files.erase(path);
      return failure();
    }
    // A mapped file is registered so that readers can drop its pages from
    // RSS once they copied a weight out (support/SourcePages.h).
    bool mapped = (*buffer)->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap;
    if (mapped)
      compiler::registerMappedFile((*buffer)->getBufferStart(), (*buffer)->getBufferSize());
    file = std::shared_ptr<llvm::MemoryBuffer>(buffer->release(), [mapped](llvm::MemoryBuffer *b) {
      if (mapped)
        compiler::unregisterMappedFile(b->getBufferStart());
      delete b;
    });
    if (!embedded)
      externalFiles.push_back(rel.str());
  }
  uint64_t size = file->getBufferSize();
  uint64_t bytes = length.value_or(offset <= size ? size - offset : 0);
  if (offset > size || bytes > size - offset) {
    error = "external data [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
            ") lies outside '" + std::string(path) + "' (" + std::to_string(size) + " bytes)";
    return failure();
  }
  if (bytes != expectedBytes) {
    error = "external data holds " + std::to_string(bytes) + " bytes but the tensor needs " +
            std::to_string(expectedBytes);
    return failure();
  }
  owner = file;
  return ArrayRef<char>(file->getBufferStart() + offset, bytes);
}

/// Copies the typed repeated field that holds the tensor's values (when
/// raw_data is absent) into little-endian storage bytes.
static FailureOr<std::vector<char>> typedFieldBytes(const onnx::TensorProto &tensor,
                                                    Type elementType, uint64_t count,
                                                    std::string &error) {
  std::vector<char> out;
  auto append = [&](const void *p, size_t n) {
    const char *c = static_cast<const char *>(p);
    out.insert(out.end(), c, c + n);
  };
  auto check = [&](int n) {
    if (uint64_t(n) == count)
      return true;
    error =
        "tensor has " + std::to_string(n) + " values but its dims need " + std::to_string(count);
    return false;
  };
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    if (!check(tensor.float_data_size()))
      return failure();
    for (float v : tensor.float_data())
      append(&v, 4);
    break;
  case onnx::TensorProto::DOUBLE:
    if (!check(tensor.double_data_size()))
      return failure();
    for (double v : tensor.double_data())
      append(&v, 8);
    break;
  case onnx::TensorProto::INT64:
    if (!check(tensor.int64_data_size()))
      return failure();
    for (int64_t v : tensor.int64_data())
      append(&v, 8);
    break;
  default: {
    // int32_data holds INT32 and, one per element, the narrower types
    // (FLOAT16/BFLOAT16 as their bit patterns).
    if (!check(tensor.int32_data_size()))
      return failure();
    uint64_t width = storageBytes(elementType);
    for (int32_t v : tensor.int32_data()) {
      if (elementType.isInteger(1))
        v = v != 0;
      append(&v, width); // little-endian: the low bytes come first
    }
    break;
  }
  }
  return out;
}

/// A resource key for a tensor: MLIR prints keys bare, so anything but
/// letters, digits, '_' and '.' becomes '_' (the blob manager makes
/// duplicates unique).
static std::string blobName(const onnx::TensorProto &tensor) {
  std::string name = tensor.name().empty() ? "tensor" : tensor.name();
  for (char &c : name)
    if (!llvm::isAlnum(c) && c != '_' && c != '.')
      c = '_';
  if (llvm::isDigit(name[0]) || name[0] == '.')
    name.insert(0, "t");
  return name;
}

FailureOr<ElementsAttr> TensorImporter::importTensor(const onnx::TensorProto &tensor,
                                                     std::string &error) {
  Type elementType = getElementType(context, tensor.data_type());
  if (!elementType) {
    error = "element type " + onnxTypeName(tensor.data_type()) + " is not supported";
    return failure();
  }
  if (tensor.segment().begin() != 0 || tensor.segment().end() != 0) {
    error = "segmented tensors are not supported";
    return failure();
  }
  SmallVector<int64_t> shape;
  uint64_t count = 1;
  for (int64_t d : tensor.dims()) {
    std::optional<int64_t> next = llvm::checkedMul<int64_t>(int64_t(count), d);
    if (d < 0 || !next) {
      error = "tensor dims are invalid";
      return failure();
    }
    count = uint64_t(*next);
    shape.push_back(d);
  }
  uint64_t width = storageBytes(elementType);
  if (count > (uint64_t(1) << 62) / width) {
    error = "tensor is too large";
    return failure();
  }
  uint64_t bytes = count * width;
  auto type = RankedTensorType::get(shape, elementType);

  // Where the bytes are and who keeps them alive.
  ArrayRef<char> data;
  std::shared_ptr<const void> owner;
  std::vector<char> copied;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    std::shared_ptr<llvm::MemoryBuffer> file;
    FailureOr<ArrayRef<char>> external = readExternal(tensor, bytes, file, error);
    if (failed(external))
      return failure();
    data = *external;
    owner = file;
  } else if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != bytes) {
      error = "raw_data holds " + std::to_string(tensor.raw_data().size()) +
              " bytes but the tensor needs " + std::to_string(bytes);
      return failure();
    }
    data = ArrayRef<char>(tensor.raw_data().data(), tensor.raw_data().size());
    owner = model;
  } else {
    FailureOr<std::vector<char>> typed = typedFieldBytes(tensor, elementType, count, error);
    if (failed(typed))
      return failure();
    copied = std::move(*typed);
    data = copied;
  }

  if (elementType.isInteger(1)) {
    // DenseElementsAttr packs i1; build it from bools.
    SmallVector<bool> values;
    for (char c : data)
      values.push_back(c != 0);
    return ElementsAttr(DenseElementsAttr::get(type, values));
  }
  if (int64_t(count) <= maxInlineElements || !owner) {
    if (int64_t(count) > maxInlineElements) {
      // Values that came from typed fields have no owner to alias.
      return ElementsAttr(DenseResourceElementsAttr::get(
          type, blobName(tensor), HeapAsmResourceBlob::allocateAndCopyWithAlign(data, width)));
    }
    bool detectedSplat = false;
    if (!DenseElementsAttr::isValidRawBuffer(type, data, detectedSplat)) {
      error = "tensor bytes do not match its type";
      return failure();
    }
    return ElementsAttr(DenseElementsAttr::getFromRawBuffer(type, data));
  }
  // Alias the bytes, never copy them: a copy would put the weight in memory
  // for the whole build. Data at an odd offset (external data, or a weight
  // served from the ONNX file itself) is aliased with alignment 1; kiln reads
  // resource blobs only by memcpy (plan::streamWeightBytes), never as typed
  // arrays.
  size_t alignment = reinterpret_cast<uintptr_t>(data.data()) % width == 0 ? width : 1;
  AsmResourceBlob blob(
      data, alignment, [owner](void *, size_t, size_t) mutable { owner.reset(); },
      /*dataIsMutable=*/false);
  return ElementsAttr(DenseResourceElementsAttr::get(type, blobName(tensor), std::move(blob)));
}

} // namespace kiln::onnx_import
