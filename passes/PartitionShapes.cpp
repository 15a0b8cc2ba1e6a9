//===- PartitionShapes.cpp - kiln-partition's shape and constant helpers --===//
//
// What the partition rules share about shapes: dims and retyped types,
// small i64 constants, the reshape targets whose head count or width a rank
// replaces, and which `kiln.shape` readers see the same dims on every rank.
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioner.h"

#include "compiler/dialect/ShapeFunctions.h"

namespace kiln::partition {

int64_t dim(Value v, int64_t i) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() == 0)
    return ShapedType::kDynamic;
  if (i < 0)
    i += t.getRank();
  return i >= 0 && i < t.getRank() ? t.getDimSize(i) : ShapedType::kDynamic;
}

/// `v`'s type with dim `axis` set to `n`.
Type withDim(Value v, int64_t axis, int64_t n) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  if (axis < 0)
    axis += t.getRank();
  shape[axis] = n;
  return t.clone(shape);
}

bool isStaticWeight(Value v, int64_t rank) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return v.getDefiningOp<ConstantOp>() && t && t.hasStaticShape() && t.getRank() == rank;
}

std::string nodeOf(Operation *op) {
  std::string n = plan::nodeName(op->getLoc());
  return n.empty() ? op->getName().getStringRef().str() : n;
}

/// The values of a small i64 constant, or nullopt.
std::optional<SmallVector<int64_t>> constInts(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseIntElementsAttr>(c.getValue()) : nullptr;
  if (!dense)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const APInt &x : dense.getValues<APInt>())
    out.push_back(x.getSExtValue());
  return out;
}

Value i64Const(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())}, b.getI64Type());
  return b.create<ConstantOp>(loc, type, DenseIntElementsAttr::get(type, values), StringAttr());
}

std::optional<ShapeSlot> shapeSlot(Value shape, int64_t index) {
  ShapeSlot slot;
  if (auto values = constInts(shape)) {
    if (index < 0 || index >= static_cast<int64_t>(values->size()))
      return std::nullopt;
    slot.at = index;
    slot.values = *values;
    return slot;
  }
  auto concat = shape.getDefiningOp<ConcatOp>();
  if (!concat)
    return std::nullopt;
  int64_t start = 0;
  for (unsigned i = 0; i < concat->getNumOperands(); ++i) {
    int64_t n = dim(concat->getOperand(i), 0);
    if (ShapedType::isDynamic(n))
      return std::nullopt;
    if (index < start + n) {
      auto values = constInts(concat->getOperand(i));
      if (!values)
        return std::nullopt;
      slot.concat = concat;
      slot.piece = i;
      slot.at = index - start;
      slot.values = *values;
      return slot;
    }
    start += n;
  }
  return std::nullopt;
}

/// The length of a 1-D reshape target, or -1.
int64_t shapeLength(Value shape) {
  int64_t n = dim(shape, 0);
  return ShapedType::isDynamic(n) ? -1 : n;
}

/// Gives `reshape` a target whose element `index` is `value`. A shared
/// target (CSE merges equal ones across layers) is copied, never changed.
void setShapeElement(OpBuilder &b, ReshapeOp reshape, int64_t index, int64_t value) {
  ShapeSlot slot = *shapeSlot(reshape.getShape(), index);
  slot.values[slot.at] = value;
  b.setInsertionPoint(reshape);
  Value piece = i64Const(b, reshape.getLoc(), slot.values);
  if (!slot.concat) {
    reshape.getShapeMutable().assign(piece);
    return;
  }
  Operation *copy = b.clone(*slot.concat);
  copy->setOperand(slot.piece, piece);
  reshape.getShapeMutable().assign(copy->getResult(0));
}

bool readsDimsBesides(ShapeOp s, int64_t axis) {
  auto type = dyn_cast<RankedTensorType>(s.getData().getType());
  if (!type)
    return false;
  auto [start, end] = shape_fn::shapeSliceBounds(s.getStart(), s.getEnd(), type.getRank());
  if (axis < 0)
    axis += type.getRank();
  if (axis < start || axis >= end)
    return true;
  const int64_t n = end - start;
  for (Operation *user : s->getUsers()) {
    auto g = dyn_cast<GatherOp>(user);
    auto picked = g ? constInts(g.getIndices()) : std::nullopt;
    if (!g || g.getData() != s.getShape() || g.getAxis() != 0 || !picked)
      return false;
    for (int64_t i : *picked)
      if ((i < 0 ? i + n : i) == axis - start)
        return false;
  }
  return true;
}

Operation *readerBesides(Value v, ArrayRef<Operation *> expected, int64_t axis) {
  for (Operation *user : v.getUsers()) {
    if (llvm::is_contained(expected, user))
      continue;
    auto s = dyn_cast<ShapeOp>(user);
    if (!s || !readsDimsBesides(s, axis))
      return user;
  }
  return nullptr;
}

void rewireShapeReaders(Value from, Value to) {
  for (OpOperand &use : llvm::make_early_inc_range(from.getUses()))
    if (isa<ShapeOp>(use.getOwner()))
      use.set(to);
}

} // namespace kiln::partition
