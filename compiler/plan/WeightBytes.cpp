//===- WeightBytes.cpp - constant values as plan weight bytes ------------===//

#include "compiler/plan/WeightBytes.h"

#include "compiler/plan/PlanAttrs.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

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

llvm::Error writeWeightBytes(mlir::ElementsAttr value, uint8_t *out) {
  auto size = weightByteSize(value);
  if (!size)
    return size.takeError();
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  bool isBool = type.getElementType().isInteger(1);

  if (auto resource = mlir::dyn_cast<mlir::DenseResourceElementsAttr>(value)) {
    mlir::AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return err("weight data '" + resource.getRawHandle().getKey() + "' is missing");
    llvm::ArrayRef<char> data = blob->getData();
    if (data.size() != *size)
      return err("weight data '" + resource.getRawHandle().getKey() + "' has " +
                 llvm::Twine(data.size()) + " bytes, but its type needs " + llvm::Twine(*size));
    std::memcpy(out, data.data(), data.size());
    // Bools must be exactly 0 or 1: the runtime reads them as C++ bool.
    if (isBool)
      for (uint64_t i = 0; i < *size; ++i)
        out[i] = out[i] != 0;
    return llvm::Error::success();
  }

  auto dense = mlir::dyn_cast<mlir::DenseElementsAttr>(value);
  if (!dense)
    return err("unsupported constant attribute kind (expected dense or dense_resource)");
  // MLIR packs i1 as bits, so bools go element by element.
  if (isBool) {
    uint64_t i = 0;
    for (bool b : dense.getValues<bool>())
      out[i++] = b ? 1 : 0;
    return llvm::Error::success();
  }
  llvm::ArrayRef<char> raw = dense.getRawData();
  uint64_t elemBytes = static_cast<uint64_t>(elementBytes(type.getElementType()));
  if (dense.isSplat()) {
    if (raw.size() < elemBytes)
      return err("malformed splat constant");
    for (uint64_t off = 0; off < *size; off += elemBytes)
      std::memcpy(out + off, raw.data(), elemBytes);
    return llvm::Error::success();
  }
  if (raw.size() != *size)
    return err("constant has " + llvm::Twine(raw.size()) + " bytes of data, but its type needs " +
               llvm::Twine(*size));
  if (raw.size() > 0) // an empty weight may have null data and `out`
    std::memcpy(out, raw.data(), raw.size());
  return llvm::Error::success();
}

} // namespace kiln::plan
