//===- KilnRoutingOps.cpp - verifiers and shapes of the routing ops ------===//
//
// TopK, OneHot, NonZero and ScatterElements (KilnRoutingOps.td): what the
// importer and kiln-inject need to see a mixture-of-experts block. None
// reaches a plan.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"
#include "compiler/dialect/ShapeFunctions.h"

using namespace mlir;

namespace kiln {

using namespace shape_fn;

namespace {

LogicalResult expectFlag(Operation *op, StringRef name, int64_t v) {
  if (v != 0 && v != 1)
    return op->emitOpError() << "attribute '" << name << "' must be 0 or 1, got " << v;
  return success();
}

/// The axis normalized against `shape`'s rank plus `extra` (1 for OneHot,
/// whose axis counts in its result's rank), or nullopt when unranked or out
/// of range.
std::optional<int64_t> axisOf(const SymShape &shape, int64_t axis, int64_t extra = 0) {
  return shape.ranked ? normalizeAxis(axis, shape.getRank() + extra) : std::nullopt;
}

/// The one value of a constant (or a shape value the context knows), if any.
SymDim oneValue(ShapeInferenceContext &ctx, Value v) {
  if (std::optional<SymDims> values = ctx.getValues(v); values && values->size() == 1)
    return (*values)[0];
  if (auto c = getConstantIntValues(v); c && c->size() == 1)
    return SymDim::of((*c)[0]);
  return SymDim::unknown();
}

} // namespace

LogicalResult TopKOp::verify() {
  if (failed(expectFlag(*this, "largest", getLargest())) ||
      failed(expectFlag(*this, "sorted", getSorted())))
    return failure();
  if (auto r = dyn_cast<RankedTensorType>(getInput().getType());
      r && !normalizeAxis(getAxis(), r.getRank()))
    return emitOpError() << "axis " << getAxis() << " is out of range for rank " << r.getRank();
  if (elementTypeOf(getValues()) != elementTypeOf(getInput()))
    return emitOpError() << "values must have the input's element type";
  return success();
}

LogicalResult TopKOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getInput());
  SymShape out = in;
  if (std::optional<int64_t> axis = axisOf(in, getAxis()))
    out.dims[*axis] = oneValue(ctx, getK());
  ctx.setResult(getValues(), elementTypeOf(getInput()), out);
  ctx.setResult(getIndices(), IntegerType::get(getContext(), 64), out);
  return success();
}

LogicalResult OneHotOp::verify() {
  if (auto r = dyn_cast<RankedTensorType>(getIndices().getType());
      r && !normalizeAxis(getAxis(), r.getRank() + 1))
    return emitOpError() << "axis " << getAxis() << " is out of range for rank "
                         << r.getRank() + 1;
  if (auto v = dyn_cast<RankedTensorType>(getValues().getType());
      v && v.hasStaticShape() && v.getNumElements() != 2)
    return emitOpError() << "values must hold two elements (off, on), got " << v;
  return success();
}

LogicalResult OneHotOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getIndices());
  SymShape out = SymShape::unranked();
  if (std::optional<int64_t> axis = axisOf(in, getAxis(), /*extra=*/1)) {
    out = in;
    out.dims.insert(out.dims.begin() + *axis, oneValue(ctx, getDepth()));
  }
  ctx.setResult(getOutput(), elementTypeOf(getValues()), out);
  return success();
}

LogicalResult NonZeroOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getInput());
  SymShape out = SymShape::get(
      {in.ranked ? SymDim::of(in.getRank()) : SymDim::unknown(), SymDim::unknown()});
  ctx.setResult(getOutput(), IntegerType::get(getContext(), 64), out);
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  StringRef r = getReduction();
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return emitOpError() << "reduction must be none, add, mul, max or min, got '" << r << "'";
  if (elementTypeOf(getUpdates()) != elementTypeOf(getData()))
    return emitOpError() << "updates must have data's element type";
  if (auto d = dyn_cast<RankedTensorType>(getData().getType());
      d && !normalizeAxis(getAxis(), d.getRank()))
    return emitOpError() << "axis " << getAxis() << " is out of range for rank " << d.getRank();
  return success();
}

LogicalResult ScatterElementsOp::inferShapes(ShapeInferenceContext &ctx) {
  ctx.setResult(getOutput(), elementTypeOf(getData()), ctx.getShape(getData()));
  return success();
}

} // namespace kiln
