//===- PartitionShard.cpp - one rank's slice of a weight ------------------===//

#include "passes/PartitionShard.h"

#include "compiler/dialect/KilnOps.h"
#include "compiler/plan/PlanAttrs.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"

#include <cstring>

using namespace mlir;

namespace kiln::partition {

Range rankRange(int64_t total, int64_t ranks, int64_t rank) {
  int64_t base = total / ranks, extra = total % ranks;
  Range r;
  r.count = base + (rank < extra ? 1 : 0);
  r.first = rank * base + std::min(rank, extra);
  return r;
}

std::vector<Range> rankRanges(int64_t total, int64_t ranks) {
  std::vector<Range> out;
  for (int64_t r = 0; r < ranks; ++r)
    out.push_back(rankRange(total, ranks, r));
  return out;
}

std::string weightName(Value weight) {
  auto c = weight.getDefiningOp<ConstantOp>();
  if (!c)
    return "";
  if (auto n = c.getNameAttr(); n && !n.getValue().empty())
    return n.str();
  return plan::nodeName(c.getLoc());
}

namespace {

/// Copies the slice out of row-major `src` (shape `full`) into `dst`.
void copySlice(const char *src, char *dst, ArrayRef<int64_t> full, int64_t axis, int64_t offset,
               int64_t count, int64_t fullDim, int64_t groups, int64_t elemBytes) {
  int64_t outer = 1, inner = elemBytes;
  for (int64_t i = 0; i < axis; ++i)
    outer *= full[i];
  for (int64_t i = axis + 1; i < static_cast<int64_t>(full.size()); ++i)
    inner *= full[i];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t g = 0; g < groups; ++g) {
      std::memcpy(dst, src + ((o * groups + g) * fullDim + offset) * inner,
                  static_cast<size_t>(count * inner));
      dst += count * inner;
    }
}

/// The dense slice of a small constant (biases, norms in a lit test).
ElementsAttr sliceDense(DenseElementsAttr dense, RankedTensorType to, int64_t axis, int64_t offset,
                        int64_t count, int64_t fullDim, int64_t groups) {
  if (dense.isSplat())
    return DenseElementsAttr::get(to, dense.getSplatValue<Attribute>());
  auto from = cast<RankedTensorType>(dense.getType());
  int64_t elemBytes = plan::elementBytes(from.getElementType());
  std::vector<char> out(static_cast<size_t>(to.getNumElements() * elemBytes));
  copySlice(dense.getRawData().data(), out.data(), from.getShape(), axis, offset, count, fullDim,
            groups, elemBytes);
  return DenseElementsAttr::getFromRawBuffer(to, out);
}

} // namespace

Value sliceWeight(OpBuilder &b, Value weight, int64_t axis, int64_t offset, int64_t count,
                  int64_t fullDim, int64_t groups, int64_t rank) {
  auto c = weight.getDefiningOp<ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  if (!c || !type || !type.hasStaticShape() || type.getElementType().isInteger(1))
    return nullptr;
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = count * groups;
  auto to = RankedTensorType::get(shape, type.getElementType());
  std::string name = weightName(weight);
  ElementsAttr value;
  if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue())) {
    value = sliceDense(dense, to, axis, offset, count, fullDim, groups);
  } else {
    // A resource without data: nothing reads it but the plan writer, which
    // reads `source` instead (kiln.shard).
    std::string key = "shard." + std::to_string(rank) + "." + name;
    for (char &ch : key)
      if (!llvm::isAlnum(ch) && ch != '_' && ch != '.')
        ch = '_';
    auto handle = DenseResourceElementsHandle::getManagerInterface(b.getContext()).insert(key);
    value = DenseResourceElementsAttr::get(to, handle);
  }
  NamedAttrList spec;
  spec.append("full_name", b.getStringAttr(name));
  spec.append("axis", b.getI64IntegerAttr(axis));
  spec.append("offset", b.getI64IntegerAttr(offset));
  spec.append("full_dim", b.getI64IntegerAttr(fullDim));
  spec.append("groups", b.getI64IntegerAttr(groups));
  spec.append("source", c.getValue());
  auto slice = b.create<ConstantOp>(c.getLoc(), to, value, b.getStringAttr(name));
  slice->setAttr(kShardAttr, spec.getDictionary(b.getContext()));
  return slice.getOutput();
}

} // namespace kiln::partition
