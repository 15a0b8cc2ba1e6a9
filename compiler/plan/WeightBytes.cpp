//===- WeightBytes.cpp - constant values as plan weight bytes ------------===//

#include "compiler/plan/WeightBytes.h"

#include "compiler/plan/PlanAttrs.h"
#include "compiler/support/SourcePages.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace kiln::plan {
namespace {

llvm::Error err(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Expected<uint64_t> weightByteSize(mlir::ElementsAttr value) {
  auto type = mlir::dyn_cast<mlir::RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return err("a constant needs a static shape to become a weight");
  if (!type.getElementType().isIntOrFloat())
    return err("a constant of element type other than integer or float cannot be a weight");
  return static_cast<uint64_t>(type.getNumElements()) *
         static_cast<uint64_t>(elementBytes(type.getElementType()));
}

namespace {

/// Bytes per piece when a value must be converted on its way out.
constexpr uint64_t kChunkBytes = 1 << 20;
/// Bytes of a mapped weight passed on (and released) at a time.
constexpr uint64_t kReleaseBytes = 64 << 20;

llvm::Error sinkFailed() { return err("writing the weight's bytes failed"); }

/// Bools must be exactly 0 or 1: the runtime reads them as C++ bool.
llvm::Error streamNormalizedBools(const char *data, uint64_t size, WeightSink sink) {
  std::vector<uint8_t> chunk;
  for (uint64_t pos = 0; pos < size; pos += kChunkBytes) {
    uint64_t n = std::min(kChunkBytes, size - pos);
    chunk.resize(n);
    for (uint64_t i = 0; i < n; ++i)
      chunk[i] = data[pos + i] != 0;
    if (!sink(chunk.data(), n))
      return sinkFailed();
  }
  return llvm::Error::success();
}

llvm::Error streamResource(mlir::DenseResourceElementsAttr resource, uint64_t size, bool isBool,
                           WeightSink sink) {
  mlir::AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob)
    return err("weight data '" + resource.getRawHandle().getKey() + "' is missing");
  llvm::ArrayRef<char> data = blob->getData();
  if (data.size() != size)
    return err("weight data '" + resource.getRawHandle().getKey() + "' has " +
               llvm::Twine(data.size()) + " bytes, but its type needs " + llvm::Twine(size));
  if (isBool) {
    llvm::Error e = streamNormalizedBools(data.data(), size, sink);
    compiler::releaseSourcePages(data.data(), size);
    return e;
  }
  // Read once, done: a mapped model file's pages need not stay resident.
  // Pieces bound the resident pages even for one multi-GB weight.
  for (uint64_t pos = 0; pos < size; pos += kReleaseBytes) {
    uint64_t n = std::min(kReleaseBytes, size - pos);
    bool ok = sink(data.data() + pos, n);
    compiler::releaseSourcePages(data.data() + pos, n);
    if (!ok)
      return sinkFailed();
  }
  return llvm::Error::success();
}

llvm::Error streamDense(mlir::DenseElementsAttr dense, mlir::Type elementType, uint64_t size,
                        WeightSink sink) {
  // MLIR packs i1 as bits, so bools go element by element.
  if (elementType.isInteger(1)) {
    std::vector<uint8_t> bytes;
    bytes.reserve(size);
    for (bool b : dense.getValues<bool>())
      bytes.push_back(b ? 1 : 0);
    if (bytes.size() != size)
      return err("malformed bool constant");
    return size == 0 || sink(bytes.data(), size) ? llvm::Error::success() : sinkFailed();
  }
  llvm::ArrayRef<char> raw = dense.getRawData();
  uint64_t elemBytes = static_cast<uint64_t>(elementBytes(elementType));
  if (dense.isSplat()) {
    if (raw.size() < elemBytes)
      return err("malformed splat constant");
    // A splat can stand for gigabytes: expand it one chunk at a time.
    uint64_t perChunk = std::max<uint64_t>(1, kChunkBytes / elemBytes) * elemBytes;
    std::vector<char> chunk(std::min(perChunk, size));
    for (uint64_t off = 0; off < chunk.size(); off += elemBytes)
      std::memcpy(chunk.data() + off, raw.data(), elemBytes);
    for (uint64_t pos = 0; pos < size; pos += chunk.size())
      if (!sink(chunk.data(), std::min<uint64_t>(chunk.size(), size - pos)))
        return sinkFailed();
    return llvm::Error::success();
  }
  if (raw.size() != size)
    return err("constant has " + llvm::Twine(raw.size()) + " bytes of data, but its type needs " +
               llvm::Twine(size));
  return size == 0 || sink(raw.data(), size) ? llvm::Error::success() : sinkFailed();
}

} // namespace

llvm::Error streamWeightBytes(mlir::ElementsAttr value, WeightSink sink) {
  auto size = weightByteSize(value);
  if (!size)
    return size.takeError();
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  if (auto resource = mlir::dyn_cast<mlir::DenseResourceElementsAttr>(value))
    return streamResource(resource, *size, type.getElementType().isInteger(1), sink);
  if (auto dense = mlir::dyn_cast<mlir::DenseElementsAttr>(value))
    return streamDense(dense, type.getElementType(), *size, sink);
  return err("unsupported constant attribute kind (expected dense or dense_resource)");
}

llvm::Error streamWeightSlice(mlir::ElementsAttr full, int64_t axis, int64_t offset,
                              int64_t count, int64_t fullDim, int64_t groups, WeightSink sink) {
  auto size = weightByteSize(full);
  if (!size)
    return size.takeError();
  auto type = mlir::cast<mlir::RankedTensorType>(full.getType());
  if (type.getElementType().isInteger(1))
    return err("bool weights are never split");
  llvm::ArrayRef<int64_t> shape = type.getShape();
  if (axis < 0 || axis >= type.getRank() || groups < 1 || offset < 0 || count < 0 ||
      offset + count > fullDim || shape[axis] != groups * fullDim)
    return err("the shard does not fit the weight it slices");
  const char *data = nullptr;
  bool resource = false;
  if (auto r = mlir::dyn_cast<mlir::DenseResourceElementsAttr>(full)) {
    mlir::AsmResourceBlob *blob = r.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != *size)
      return err("weight data '" + r.getRawHandle().getKey() + "' is missing or has the wrong size");
    data = blob->getData().data();
    resource = true;
  } else if (auto dense = mlir::dyn_cast<mlir::DenseElementsAttr>(full);
             dense && !dense.isSplat()) {
    data = dense.getRawData().data();
  } else {
    return err("a split weight must be dense or a resource, not a splat");
  }
  int64_t outer = 1, inner = elementBytes(type.getElementType());
  for (int64_t i = 0; i < axis; ++i)
    outer *= shape[i];
  for (int64_t i = axis + 1; i < type.getRank(); ++i)
    inner *= shape[i];
  const uint64_t run = static_cast<uint64_t>(count * inner);
  std::vector<char> buffer;
  buffer.reserve(std::max<uint64_t>(kChunkBytes, run));
  auto flush = [&]() {
    bool ok = buffer.empty() || sink(buffer.data(), buffer.size());
    buffer.clear();
    return ok;
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t g = 0; g < groups; ++g) {
      const char *from = data + ((o * groups + g) * fullDim + offset) * inner;
      if (buffer.size() + run > buffer.capacity() && !flush())
        return sinkFailed();
      buffer.insert(buffer.end(), from, from + run);
    }
  if (!flush())
    return sinkFailed();
  if (resource)
    compiler::releaseSourcePages(data, *size);
  return llvm::Error::success();
}

llvm::Error writeWeightBytes(mlir::ElementsAttr value, uint8_t *out) {
  // An empty weight passes no bytes, so a null `out` is never written.
  return streamWeightBytes(value, [&out](const void *data, uint64_t size) {
    std::memcpy(out, data, size);
    out += size;
    return true;
  });
}

} // namespace kiln::plan
