//===- KilnCollectiveOps.cpp - verifiers and shapes of the collectives ----===//
//
// What a collective's types can show: the element types agree, all_reduce
// keeps the shape, and all_gather's result extent is the sum of the ranks'
// extents while this rank's operand has one of them. Dynamic dims are
// accepted; the runtime checks real shapes.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnCollectiveOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace kiln {
namespace {

Type elementOf(Value v) { return cast<TensorType>(v.getType()).getElementType(); }

} // namespace

void registerCollectiveOps(Dialect &dialect) {
  RegisteredOperationName::insert<AllReduceOp>(dialect);
  RegisteredOperationName::insert<AllGatherOp>(dialect);
}

LogicalResult AllReduceOp::verify() {
  if (getReduction() != "sum")
    return emitOpError() << "reduction must be 'sum', got '" << getReduction() << "'";
  if (elementOf(getX()) != elementOf(getY()))
    return emitOpError() << "operand and result must share the element type, got "
                         << elementOf(getX()) << " and " << elementOf(getY());
  if (failed(verifyCompatibleShape(getX().getType(), getY().getType())))
    return emitOpError() << "operand and result must have the same shape, got " << getX().getType()
                         << " and " << getY().getType();
  return success();
}

LogicalResult AllReduceOp::inferShapes(ShapeInferenceContext &ctx) {
  return inferUnaryOp(getOperation(), ctx);
}

LogicalResult AllGatherOp::verify() {
  if (elementOf(getX()) != elementOf(getY()))
    return emitOpError() << "operand and result must share the element type, got "
                         << elementOf(getX()) << " and " << elementOf(getY());
  ArrayRef<int64_t> sizes = getSizes();
  if (sizes.size() < 2)
    return emitOpError() << "sizes must have one entry per rank (at least 2), got " << sizes.size();
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return emitOpError() << "sizes must be >= 0, got " << s;
    total += s;
  }
  auto x = dyn_cast<RankedTensorType>(getX().getType());
  auto y = dyn_cast<RankedTensorType>(getY().getType());
  if (!x || !y)
    return success();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= x.getRank())
    return emitOpError() << "axis " << axis << " is out of range for rank " << x.getRank();
  if (x.getRank() != y.getRank())
    return emitOpError() << "operand and result must have the same rank, got " << x << " and " << y;
  for (int64_t i = 0; i < x.getRank(); ++i) {
    int64_t a = x.getDimSize(i), b = y.getDimSize(i);
    if (i == axis) {
      if (!ShapedType::isDynamic(b) && b != total)
        return emitOpError() << "result dim " << axis << " must be the sum of sizes (" << total
                             << "), got " << b;
      if (!ShapedType::isDynamic(a) && !llvm::is_contained(sizes, a))
        return emitOpError() << "operand dim " << axis << " (" << a
                             << ") must be one of the ranks' sizes";
    } else if (!ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b) {
      return emitOpError() << "operand and result must agree off the gather axis, got " << x
                           << " and " << y;
    }
  }
  return success();
}

LogicalResult AllGatherOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape shape = ctx.getShape(getX());
  int64_t axis = getAxis();
  if (shape.ranked && axis >= 0 && axis < static_cast<int64_t>(shape.dims.size())) {
    int64_t total = 0;
    for (int64_t s : getSizes())
      total += s;
    shape.dims[axis] = SymDim::of(total);
  }
  ctx.setResult(getY(), elementOf(getX()), shape);
  return success();
}

} // namespace kiln

#define GET_OP_CLASSES
#include "compiler/dialect/KilnCollectiveOps.cpp.inc"
