//===- KilnVerify.cpp - kiln op verifiers ---------------------------------===//
//
// Verifiers check what the types and constant operands can prove: broadcast
// compatibility of static dims, ranks, axis ranges, operand counts and the
// attribute values ONNX allows. Anything dynamic is accepted; the runtime
// checks it against real shapes.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;

namespace kiln {

static Type elementTypeOf(Value v) { return cast<TensorType>(v.getType()).getElementType(); }

static std::optional<int64_t> rankOf(Value v) {
  auto ranked = dyn_cast<RankedTensorType>(v.getType());
  if (!ranked)
    return std::nullopt;
  return ranked.getRank();
}

std::optional<SmallVector<int64_t>> getConstantIntValues(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.getElementType().isIntOrIndex())
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const APInt &v : dense.getValues<APInt>())
    out.push_back(v.getSExtValue());
  return out;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank, bool inclusiveEnd) {
  int64_t limit = inclusiveEnd ? rank + 1 : rank;
  if (axis < -rank || axis >= limit)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

/// Fails unless `v` is a ranked tensor of rank `rank` (unranked passes).
static LogicalResult expectRank(Operation *op, Value v, int64_t rank, StringRef what) {
  std::optional<int64_t> r = rankOf(v);
  if (r && *r != rank)
    return op->emitOpError() << what << " must have rank " << rank << ", got " << v.getType();
  return success();
}

static LogicalResult expectAxis(Operation *op, int64_t axis, std::optional<int64_t> rank,
                                bool inclusiveEnd = false) {
  if (rank && !normalizeAxis(axis, *rank, inclusiveEnd))
    return op->emitOpError() << "axis " << axis << " is out of range for rank " << *rank;
  return success();
}

static LogicalResult expectFlag(Operation *op, StringRef name, int64_t value) {
  if (value != 0 && value != 1)
    return op->emitOpError() << "attribute '" << name << "' must be 0 or 1, got " << value;
  return success();
}

/// The result must have `shape` where both are static.
static LogicalResult expectResultShape(Operation *op, Value result, ArrayRef<int64_t> shape) {
  auto ranked = dyn_cast<RankedTensorType>(result.getType());
  if (ranked && failed(verifyCompatibleShape(ranked.getShape(), shape)))
    return op->emitOpError() << "result type " << result.getType()
                             << " is incompatible with the expected shape "
                             << RankedTensorType::get(shape, ranked.getElementType());
  return success();
}

static LogicalResult expectSameElementType(Operation *op, Value a, Value b, StringRef what) {
  if (elementTypeOf(a) != elementTypeOf(b))
    return op->emitOpError() << what << " must have the same element type, got " << a.getType()
                             << " and " << b.getType();
  return success();
}

/// Broadcasts the static shapes of `values` (numpy rules); nullopt when any
/// is unranked. Fails with an error when two static dims clash.
static FailureOr<std::optional<SmallVector<int64_t>>> broadcastTypes(Operation *op,
                                                                     ValueRange values) {
  SmallVector<int64_t> shape;
  for (auto [i, v] : llvm::enumerate(values)) {
    auto ranked = dyn_cast<RankedTensorType>(v.getType());
    if (!ranked)
      return std::optional<SmallVector<int64_t>>();
    SmallVector<int64_t> next;
    if (i == 0) {
      shape.assign(ranked.getShape().begin(), ranked.getShape().end());
      continue;
    }
    if (!OpTrait::util::getBroadcastedShape(shape, ranked.getShape(), next)) {
      InFlightDiagnostic diag = op->emitOpError() << "operands are not broadcast-compatible:";
      for (Value w : values)
        diag << " " << w.getType();
      return failure();
    }
    shape = std::move(next);
  }
  return std::optional<SmallVector<int64_t>>(shape);
}

//===----------------------------------------------------------------------===//
// Families
//===----------------------------------------------------------------------===//

LogicalResult verifyBroadcastOp(Operation *op, ElemRule rule) {
  Value a = op->getOperand(0), b = op->getOperand(1), c = op->getResult(0);
  if (rule != ElemRule::FirstOperand && failed(expectSameElementType(op, a, b, "operands")))
    return failure();
  Type expected = rule == ElemRule::Bool ? IntegerType::get(op->getContext(), 1) : elementTypeOf(a);
  if (elementTypeOf(c) != expected)
    return op->emitOpError() << "result element type must be " << expected << ", got "
                             << c.getType();
  auto shape = broadcastTypes(op, op->getOperands());
  if (failed(shape))
    return failure();
  return *shape ? expectResultShape(op, c, **shape) : success();
}

LogicalResult verifyUnaryOp(Operation *op) {
  Value x = op->getOperand(0), y = op->getResult(0);
  if (failed(verifyCompatibleShape(x.getType(), y.getType())) ||
      elementTypeOf(x) != elementTypeOf(y))
    return op->emitOpError() << "result type " << y.getType() << " must match the operand type "
                             << x.getType();
  return success();
}

LogicalResult verifySoftmaxLikeOp(Operation *op, int64_t axis) {
  if (failed(verifyUnaryOp(op)))
    return failure();
  return expectAxis(op, axis, rankOf(op->getOperand(0)));
}

/// Shared by Squeeze, Unsqueeze and the reductions: axes is 1-D and, when constant, has no
/// duplicates and fits `rank`.
static LogicalResult verifyAxesOperand(Operation *op, Value axes, std::optional<int64_t> rank) {
  if (failed(expectRank(op, axes, 1, "axes")))
    return failure();
  std::optional<SmallVector<int64_t>> values = getConstantIntValues(axes);
  if (!values || !rank)
    return success();
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : *values) {
    if (failed(expectAxis(op, axis, rank)))
      return failure();
    if (!seen.insert(*normalizeAxis(axis, *rank)).second)
      return op->emitOpError() << "axes contain " << axis << " twice";
  }
  return success();
}

LogicalResult verifyReduceOp(Operation *op, int64_t keepdims, int64_t noopWithEmptyAxes) {
  if (failed(expectFlag(op, "keepdims", keepdims)) ||
      failed(expectFlag(op, "noop_with_empty_axes", noopWithEmptyAxes)))
    return failure();
  Value data = op->getOperand(0), result = op->getResult(0);
  if (elementTypeOf(data) != elementTypeOf(result))
    return op->emitOpError() << "result element type must match the data's";
  if (op->getNumOperands() < 2)
    return success();
  Value axes = op->getOperand(1);
  std::optional<int64_t> rank = rankOf(data);
  if (failed(verifyAxesOperand(op, axes, rank)))
    return failure();
  std::optional<SmallVector<int64_t>> values = getConstantIntValues(axes);
  if (!rank || !values)
    return success();
  std::optional<int64_t> resultRank = rankOf(result);
  int64_t expected = keepdims || (values->empty() && noopWithEmptyAxes)
                         ? *rank
                         : *rank - (values->empty() ? *rank : int64_t(values->size()));
  if (resultRank && *resultRank != expected)
    return op->emitOpError() << "result must have rank " << expected << ", got "
                             << result.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Single ops
//===----------------------------------------------------------------------===//

LogicalResult WhereOp::verify() {
  if (failed(expectSameElementType(*this, getX(), getY(), "x and y")))
    return failure();
  if (elementTypeOf(getOutput()) != elementTypeOf(getX()))
    return emitOpError() << "result element type must match x's";
  auto shape = broadcastTypes(*this, getOperands());
  if (failed(shape))
    return failure();
  return *shape ? expectResultShape(*this, getOutput(), **shape) : success();
}

LogicalResult IsNaNOp::verify() {
  if (failed(verifyCompatibleShape(getX().getType(), getY().getType())))
    return emitOpError() << "result shape must match the operand's";
  return success();
}

LogicalResult MatMulOp::verify() {
  if (failed(expectSameElementType(*this, getA(), getB(), "operands")) ||
      failed(expectSameElementType(*this, getA(), getY(), "operands and result")))
    return failure();
  auto a = dyn_cast<RankedTensorType>(getA().getType());
  auto b = dyn_cast<RankedTensorType>(getB().getType());
  if ((a && a.getRank() == 0) || (b && b.getRank() == 0))
    return emitOpError() << "operands must have rank >= 1";
  if (!a || !b)
    return success();
  int64_t k1 = a.getShape().back();
  int64_t k2 = b.getRank() == 1 ? b.getShape()[0] : b.getShape()[b.getRank() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOpError() << "contraction dims differ: " << a << " and " << b;
  SmallVector<int64_t> batch;
  ArrayRef<int64_t> batchA = a.getShape().drop_back(a.getRank() >= 2 ? 2 : 1);
  ArrayRef<int64_t> batchB = b.getShape().drop_back(b.getRank() >= 2 ? 2 : 1);
  if (!OpTrait::util::getBroadcastedShape(batchA, batchB, batch))
    return emitOpError() << "batch dims are not broadcast-compatible: " << a << " and " << b;
  if (a.getRank() >= 2)
    batch.push_back(a.getShape()[a.getRank() - 2]);
  if (b.getRank() >= 2)
    batch.push_back(b.getShape().back());
  return expectResultShape(*this, getY(), batch);
}

LogicalResult GemmOp::verify() {
  if (failed(expectFlag(*this, "transA", getTransA())) ||
      failed(expectFlag(*this, "transB", getTransB())) ||
      failed(expectRank(*this, getA(), 2, "a")) || failed(expectRank(*this, getB(), 2, "b")) ||
      failed(expectRank(*this, getY(), 2, "the result")) ||
      failed(expectSameElementType(*this, getA(), getB(), "a and b")) ||
      failed(expectSameElementType(*this, getA(), getY(), "a and the result")))
    return failure();
  if (getC() && rankOf(getC()) && *rankOf(getC()) > 2)
    return emitOpError() << "c must have rank <= 2, got " << getC().getType();
  auto a = dyn_cast<RankedTensorType>(getA().getType());
  auto b = dyn_cast<RankedTensorType>(getB().getType());
  if (!a || !b)
    return success();
  int64_t m = a.getShape()[getTransA() ? 1 : 0], k1 = a.getShape()[getTransA() ? 0 : 1];
  int64_t k2 = b.getShape()[getTransB() ? 1 : 0], n = b.getShape()[getTransB() ? 0 : 1];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOpError() << "contraction dims differ: " << a << " and " << b;
  if (getC()) {
    SmallVector<int64_t> out;
    auto c = dyn_cast<RankedTensorType>(getC().getType());
    if (c && (!OpTrait::util::getBroadcastedShape({m, n}, c.getShape(), out) || out.size() != 2))
      return emitOpError() << "c " << c << " does not broadcast to " << m << "x" << n;
  }
  return expectResultShape(*this, getY(), {m, n});
}

LogicalResult LayerNormalizationOp::verify() {
  if (failed(expectSameElementType(*this, getX(), getScale(), "x and scale")) ||
      failed(expectAxis(*this, getAxis(), rankOf(getX()))))
    return failure();
  if (getB() && failed(expectSameElementType(*this, getX(), getB(), "x and b")))
    return failure();
  if (getStashType() != 1)
    return emitOpError() << "stash_type must be 1 (float), got " << getStashType();
  if (failed(verifyCompatibleShape(getX().getType(), getY().getType())) ||
      elementTypeOf(getX()) != elementTypeOf(getY()))
    return emitOpError() << "result type " << getY().getType() << " must match x's "
                         << getX().getType();
  return success();
}

LogicalResult CastOp::verify() {
  Type to = getElementTypeForDType(getContext(), getTo());
  if (!to)
    return emitOpError() << "'to' = " << getTo() << " is not a kiln DType number";
  if (elementTypeOf(getOutput()) != to)
    return emitOpError() << "result element type must be " << to << " (to = " << getTo()
                         << "), got " << getOutput().getType();
  if (failed(verifyCompatibleShape(getInput().getType(), getOutput().getType())))
    return emitOpError() << "result shape must match the input's";
  return success();
}

LogicalResult ReshapeOp::verify() {
  if (failed(expectFlag(*this, "allowzero", getAllowzero())) ||
      failed(expectRank(*this, getShape(), 1, "shape")) ||
      failed(expectSameElementType(*this, getData(), getReshaped(), "data and result")))
    return failure();
  auto in = dyn_cast<RankedTensorType>(getData().getType());
  auto out = dyn_cast<RankedTensorType>(getReshaped().getType());
  if (in && out && in.hasStaticShape() && out.hasStaticShape() &&
      in.getNumElements() != out.getNumElements())
    return emitOpError() << "reshape changes the element count: " << in << " to " << out;
  std::optional<SmallVector<int64_t>> shape = getConstantIntValues(getShape());
  if (!shape)
    return success();
  int inferred = 0;
  bool zero = false;
  for (int64_t d : *shape) {
    if (d < -1)
      return emitOpError() << "shape entry " << d << " is invalid (must be >= -1)";
    inferred += d == -1;
    zero |= d == 0;
  }
  if (inferred > 1)
    return emitOpError() << "shape has more than one -1";
  if (inferred && zero && getAllowzero())
    return emitOpError() << "shape has both -1 and 0 with allowzero = 1";
  std::optional<int64_t> resultRank = rankOf(getReshaped());
  if (resultRank && *resultRank != int64_t(shape->size()))
    return emitOpError() << "result rank " << *resultRank << " differs from the shape's length "
                         << shape->size();
  return success();
}

LogicalResult TransposeOp::verify() {
  ArrayRef<int64_t> perm = getPerm();
  std::optional<int64_t> rank = rankOf(getData());
  if (rank && *rank != int64_t(perm.size()))
    return emitOpError() << "perm has " << perm.size() << " entries for rank " << *rank;
  SmallVector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(perm.size()) || seen[p])
      return emitOpError() << "perm is not a permutation";
    seen[p] = true;
  }
  if (failed(expectSameElementType(*this, getData(), getTransposed(), "data and result")))
    return failure();
  auto in = dyn_cast<RankedTensorType>(getData().getType());
  if (!in)
    return success();
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(in.getShape()[p]);
  return expectResultShape(*this, getTransposed(), shape);
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  std::optional<int64_t> rank;
  for (Value v : getInputs()) {
    if (failed(expectSameElementType(*this, getInputs()[0], v, "inputs")))
      return failure();
    std::optional<int64_t> r = rankOf(v);
    if (r && rank && *r != *rank)
      return emitOpError() << "inputs must have the same rank";
    rank = r ? r : rank;
  }
  if (failed(expectSameElementType(*this, getInputs()[0], getConcatResult(), "result")))
    return failure();
  if (!rank)
    return success();
  if (*rank == 0)
    return emitOpError() << "inputs must have rank >= 1";
  if (failed(expectAxis(*this, getAxis(), rank)))
    return failure();
  int64_t axis = *normalizeAxis(getAxis(), *rank);
  SmallVector<int64_t> shape(*rank, ShapedType::kDynamic);
  int64_t total = 0;
  for (Value v : getInputs()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t) {
      total = ShapedType::kDynamic;
      continue;
    }
    for (int64_t i = 0; i < *rank; ++i) {
      if (i == axis || ShapedType::isDynamic(t.getShape()[i]))
        continue;
      if (!ShapedType::isDynamic(shape[i]) && shape[i] != t.getShape()[i])
        return emitOpError() << "inputs differ in dim " << i << " (not the axis)";
      shape[i] = t.getShape()[i];
    }
    int64_t d = t.getShape()[axis];
    total =
        ShapedType::isDynamic(total) || ShapedType::isDynamic(d) ? ShapedType::kDynamic : total + d;
  }
  shape[axis] = total;
  return expectResultShape(*this, getConcatResult(), shape);
}

LogicalResult SplitOp::verify() {
  int64_t n = getNumOutputs();
  if (n < 0)
    return emitOpError() << "num_outputs must be >= 0, got " << n;
  if (getOutputs().empty())
    return emitOpError() << "needs at least one result";
  if (getSplit() && n != 0)
    return emitOpError() << "takes a split operand or num_outputs, not both";
  if (!getSplit() && n == 0)
    return emitOpError() << "needs a split operand or num_outputs > 0";
  if (n != 0 && n != int64_t(getOutputs().size()))
    return emitOpError() << "num_outputs = " << n << " but the op has " << getOutputs().size()
                         << " results";
  std::optional<int64_t> rank = rankOf(getInput());
  if (failed(expectAxis(*this, getAxis(), rank)))
    return failure();
  for (Value out : getOutputs())
    if (failed(expectSameElementType(*this, getInput(), out, "input and results")))
      return failure();
  if (!getSplit())
    return success();
  if (failed(expectRank(*this, getSplit(), 1, "split")))
    return failure();
  std::optional<SmallVector<int64_t>> sizes = getConstantIntValues(getSplit());
  if (!sizes)
    return success();
  if (sizes->size() != getOutputs().size())
    return emitOpError() << "split has " << sizes->size() << " sizes for " << getOutputs().size()
                         << " results";
  int64_t total = 0;
  for (int64_t s : *sizes) {
    if (s < 0)
      return emitOpError() << "split sizes must be >= 0";
    total += s;
  }
  auto in = dyn_cast<RankedTensorType>(getInput().getType());
  if (in) {
    int64_t d = in.getShape()[*normalizeAxis(getAxis(), in.getRank())];
    if (!ShapedType::isDynamic(d) && d != total)
      return emitOpError() << "split sizes sum to " << total << " but the dim is " << d;
  }
  return success();
}

LogicalResult SliceOp::verify() {
  if (failed(expectSameElementType(*this, getData(), getOutput(), "data and result")))
    return failure();
  SmallVector<Value> params = {getStarts(), getEnds()};
  if (getAxes())
    params.push_back(getAxes());
  if (getSteps())
    params.push_back(getSteps());
  std::optional<int64_t> length;
  for (Value p : params) {
    if (failed(expectRank(*this, p, 1, "starts, ends, axes and steps")))
      return failure();
    auto t = dyn_cast<RankedTensorType>(p.getType());
    if (!t || t.isDynamicDim(0))
      continue;
    if (length && *length != t.getDimSize(0))
      return emitOpError() << "starts, ends, axes and steps must have the same length";
    length = t.getDimSize(0);
  }
  if (getSteps()) {
    std::optional<SmallVector<int64_t>> steps = getConstantIntValues(getSteps());
    if (steps && llvm::is_contained(*steps, 0))
      return emitOpError() << "steps must not be 0";
  }
  std::optional<int64_t> rank = rankOf(getData());
  if (getAxes() && rank) {
    if (std::optional<SmallVector<int64_t>> axes = getConstantIntValues(getAxes()))
      for (int64_t axis : *axes)
        if (failed(expectAxis(*this, axis, rank)))
          return failure();
  }
  std::optional<int64_t> resultRank = rankOf(getOutput());
  if (rank && resultRank && *rank != *resultRank)
    return emitOpError() << "result rank must equal the data's rank";
  return success();
}

LogicalResult GatherOp::verify() {
  if (failed(expectSameElementType(*this, getData(), getOutput(), "data and result")))
    return failure();
  std::optional<int64_t> r = rankOf(getData()), q = rankOf(getIndices());
  if (r && *r == 0)
    return emitOpError() << "data must have rank >= 1";
  if (failed(expectAxis(*this, getAxis(), r)))
    return failure();
  std::optional<int64_t> out = rankOf(getOutput());
  if (r && q && out && *out != *r + *q - 1)
    return emitOpError() << "result must have rank " << *r + *q - 1 << ", got "
                         << getOutput().getType();
  return success();
}

/// The static length of the last dim of a ranked `indices` (the index tuple
/// length of GatherND and ScatterND), or nullopt.
static std::optional<int64_t> tupleLength(Value indices) {
  auto t = dyn_cast<RankedTensorType>(indices.getType());
  if (!t || t.getRank() == 0 || t.isDynamicDim(t.getRank() - 1))
    return std::nullopt;
  return t.getShape().back();
}

LogicalResult GatherNDOp::verify() {
  if (failed(expectSameElementType(*this, getData(), getOutput(), "data and result")))
    return failure();
  int64_t b = getBatchDims();
  if (b < 0)
    return emitOpError() << "batch_dims must be >= 0, got " << b;
  std::optional<int64_t> r = rankOf(getData()), q = rankOf(getIndices());
  if (r && *r < 1)
    return emitOpError() << "data must have rank >= 1";
  if (q && *q < 1)
    return emitOpError() << "indices must have rank >= 1";
  if ((r && b >= *r) || (q && b >= *q))
    return emitOpError() << "batch_dims " << b
                         << " must be less than the ranks of data and indices";
  std::optional<int64_t> m = tupleLength(getIndices());
  if (m && (*m < 1 || (r && *m > *r - b)))
    return emitOpError() << "the last dim of indices (" << *m << ") must be in [1, "
                         << (r ? std::to_string(*r - b) : "rank(data) - batch_dims") << "]";
  auto data = dyn_cast<RankedTensorType>(getData().getType());
  auto indices = dyn_cast<RankedTensorType>(getIndices().getType());
  if (!data || !indices)
    return success();
  SmallVector<int64_t> shape(indices.getShape().drop_back());
  for (int64_t i = 0; i < b; ++i) {
    int64_t d = data.getDimSize(i), n = indices.getDimSize(i);
    if (!ShapedType::isDynamic(d) && !ShapedType::isDynamic(n) && d != n)
      return emitOpError() << "batch dim " << i << " differs: " << d << " in data, " << n
                           << " in indices";
    if (ShapedType::isDynamic(n))
      shape[i] = d;
  }
  if (!m)
    return success();
  llvm::append_range(shape, data.getShape().drop_front(b + *m));
  return expectResultShape(*this, getOutput(), shape);
}

LogicalResult ScatterNDOp::verify() {
  StringRef reduction = getReduction();
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
    return emitOpError() << "reduction must be none, add, mul, max or min, got '" << reduction
                         << "'";
  if (failed(expectSameElementType(*this, getData(), getUpdates(), "data and updates")) ||
      failed(expectSameElementType(*this, getData(), getOutput(), "data and result")))
    return failure();
  if (reduction != "none" && elementTypeOf(getData()).isInteger(1))
    return emitOpError() << "reduction '" << reduction << "' is not supported for i1 data";
  if (failed(verifyCompatibleShape(getData().getType(), getOutput().getType())))
    return emitOpError() << "result type " << getOutput().getType()
                         << " must have the shape of data " << getData().getType();
  std::optional<int64_t> r = rankOf(getData()), q = rankOf(getIndices());
  if (r && *r < 1)
    return emitOpError() << "data must have rank >= 1";
  if (q && *q < 1)
    return emitOpError() << "indices must have rank >= 1";
  std::optional<int64_t> k = tupleLength(getIndices());
  if (k && (*k < 1 || (r && *k > *r)))
    return emitOpError() << "the last dim of indices (" << *k << ") must be in [1, "
                         << (r ? std::to_string(*r) : "rank(data)") << "]";
  auto data = dyn_cast<RankedTensorType>(getData().getType());
  auto indices = dyn_cast<RankedTensorType>(getIndices().getType());
  auto updates = dyn_cast<RankedTensorType>(getUpdates().getType());
  if (!data || !indices || !updates || !k)
    return success();
  SmallVector<int64_t> shape(indices.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(*k));
  if (updates.getRank() != int64_t(shape.size()) ||
      failed(verifyCompatibleShape(updates.getShape(), shape)))
    return emitOpError() << "updates " << updates << " must have shape indices.shape[:-1] + "
                         << "data.shape[" << *k
                         << ":] = " << RankedTensorType::get(shape, updates.getElementType());
  return success();
}

LogicalResult UnsqueezeOp::verify() {
  if (failed(expectSameElementType(*this, getData(), getExpanded(), "data and result")))
    return failure();
  std::optional<int64_t> r = rankOf(getData());
  std::optional<SmallVector<int64_t>> axes = getConstantIntValues(getAxes());
  std::optional<int64_t> outRank;
  if (r && axes)
    outRank = *r + int64_t(axes->size());
  if (failed(verifyAxesOperand(*this, getAxes(), outRank)))
    return failure();
  std::optional<int64_t> out = rankOf(getExpanded());
  if (outRank && out && *out != *outRank)
    return emitOpError() << "result must have rank " << *outRank;
  return success();
}

LogicalResult SqueezeOp::verify() {
  if (failed(expectSameElementType(*this, getData(), getSqueezed(), "data and result")))
    return failure();
  if (!getAxes())
    return success();
  if (failed(verifyAxesOperand(*this, getAxes(), rankOf(getData()))))
    return failure();
  auto in = dyn_cast<RankedTensorType>(getData().getType());
  std::optional<SmallVector<int64_t>> axes = getConstantIntValues(getAxes());
  if (!in || !axes)
    return success();
  for (int64_t axis : *axes) {
    int64_t d = in.getShape()[*normalizeAxis(axis, in.getRank())];
    if (!ShapedType::isDynamic(d) && d != 1)
      return emitOpError() << "cannot squeeze dim " << axis << " of size " << d;
  }
  return success();
}

LogicalResult ExpandOp::verify() {
  if (failed(expectRank(*this, getShape(), 1, "shape")) ||
      failed(expectSameElementType(*this, getInput(), getOutput(), "input and result")))
    return failure();
  auto in = dyn_cast<RankedTensorType>(getInput().getType());
  std::optional<SmallVector<int64_t>> shape = getConstantIntValues(getShape());
  if (!in || !shape)
    return success();
  SmallVector<int64_t> target, out;
  for (int64_t d : *shape) {
    if (d < 0)
      return emitOpError() << "shape entries must be >= 0, got " << d;
    target.push_back(d);
  }
  if (!OpTrait::util::getBroadcastedShape(in.getShape(), target, out))
    return emitOpError() << "input " << in << " cannot be expanded to the shape";
  return expectResultShape(*this, getOutput(), out);
}

LogicalResult TileOp::verify() {
  if (failed(expectRank(*this, getRepeats(), 1, "repeats")) ||
      failed(expectSameElementType(*this, getInput(), getOutput(), "input and result")))
    return failure();
  std::optional<int64_t> r = rankOf(getInput());
  auto repeats = dyn_cast<RankedTensorType>(getRepeats().getType());
  if (r && repeats && !repeats.isDynamicDim(0) && repeats.getDimSize(0) != *r)
    return emitOpError() << "repeats must have one entry per dim (" << *r << ")";
  if (std::optional<SmallVector<int64_t>> values = getConstantIntValues(getRepeats()))
    if (llvm::any_of(*values, [](int64_t v) { return v < 0; }))
      return emitOpError() << "repeats must be >= 0";
  return success();
}

LogicalResult FlattenOp::verify() {
  if (failed(expectAxis(*this, getAxis(), rankOf(getInput()), /*inclusiveEnd=*/true)) ||
      failed(expectRank(*this, getOutput(), 2, "the result")) ||
      failed(expectSameElementType(*this, getInput(), getOutput(), "input and result")))
    return failure();
  return success();
}

LogicalResult ClipOp::verify() {
  for (Value bound : {getMin(), getMax()}) {
    if (!bound)
      continue;
    if (failed(expectRank(*this, bound, 0, "min and max")) ||
        failed(expectSameElementType(*this, getInput(), bound, "input and bounds")))
      return failure();
  }
  return verifyUnaryOp(*this);
}

LogicalResult CumSumOp::verify() {
  if (failed(expectFlag(*this, "exclusive", getExclusive())) ||
      failed(expectFlag(*this, "reverse", getReverse())))
    return failure();
  auto axis = dyn_cast<RankedTensorType>(getAxis().getType());
  if (axis && (axis.getRank() > 1 || (axis.hasStaticShape() && axis.getNumElements() != 1)))
    return emitOpError() << "axis must be a scalar or hold one element, got " << axis;
  std::optional<int64_t> r = rankOf(getInput());
  if (r && *r < 1)
    return emitOpError() << "input must have rank >= 1";
  if (auto a = getConstantIntValues(getAxis());
      a && a->size() == 1 && failed(expectAxis(*this, (*a)[0], r)))
    return failure();
  return verifyUnaryOp(*this);
}

LogicalResult TriluOp::verify() {
  if (failed(expectFlag(*this, "upper", getUpper())))
    return failure();
  if (getK() && failed(expectRank(*this, getK(), 0, "k")))
    return failure();
  std::optional<int64_t> r = rankOf(getInput());
  if (r && *r < 2)
    return emitOpError() << "input must have rank >= 2";
  return verifyUnaryOp(*this);
}

LogicalResult ShapeOp::verify() {
  if (failed(expectRank(*this, getShape(), 1, "the result")))
    return failure();
  std::optional<int64_t> r = rankOf(getData());
  if (!r)
    return success();
  auto clampIndex = [&](int64_t i) {
    if (i < 0)
      i = i < -*r ? 0 : i + *r;
    return std::min(i, *r);
  };
  int64_t length = std::max<int64_t>(clampIndex(getEnd()) - clampIndex(getStart()), 0);
  return expectResultShape(*this, getShape(), {length});
}

LogicalResult SizeOp::verify() { return expectRank(*this, getSize(), 0, "the result"); }

LogicalResult ConstantOfShapeOp::verify() {
  if (failed(expectRank(*this, getInput(), 1, "input")))
    return failure();
  auto in = dyn_cast<RankedTensorType>(getInput().getType());
  std::optional<int64_t> out = rankOf(getOutput());
  if (in && out && !in.isDynamicDim(0) && in.getDimSize(0) != *out)
    return emitOpError() << "result rank " << *out << " differs from the shape's length "
                         << in.getDimSize(0);
  if (std::optional<SmallVector<int64_t>> shape = getConstantIntValues(getInput())) {
    for (int64_t d : *shape)
      if (d < 0)
        return emitOpError() << "shape entries must be >= 0, got " << d;
    return expectResultShape(*this, getOutput(), *shape);
  }
  return success();
}

LogicalResult RangeOp::verify() {
  for (Value v : {getStart(), getLimit(), getDelta()}) {
    if (failed(expectRank(*this, v, 0, "start, limit and delta")) ||
        failed(expectSameElementType(*this, getStart(), v, "start, limit and delta")))
      return failure();
  }
  if (failed(expectRank(*this, getOutput(), 1, "the result")) ||
      failed(expectSameElementType(*this, getStart(), getOutput(), "operands and result")))
    return failure();
  if (std::optional<SmallVector<int64_t>> delta = getConstantIntValues(getDelta()))
    if (!delta->empty() && (*delta)[0] == 0)
      return emitOpError() << "delta must not be 0";
  return success();
}

LogicalResult ConstantOp::verify() {
  if (getValue().getType() != getOutput().getType())
    return emitOpError() << "value type " << getValue().getType()
                         << " differs from the result type " << getOutput().getType();
  return success();
}

} // namespace kiln
