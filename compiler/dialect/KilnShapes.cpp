//===- KilnShapes.cpp - kiln op shape functions ---------------------------===//
//
// ShapeInferenceOpInterface::inferShapes of the elementwise families,
// reductions, linear algebra, normalization and Cast. Data movement and
// shape computation are in KilnShapeOps.cpp; helpers both share are in
// ShapeFunctions.h.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"
#include "compiler/dialect/ShapeFunctions.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;

namespace kiln {

using namespace shape_fn;

namespace {

/// The numpy broadcast of two dims, when it can be known.
SymDim broadcastDim(const SymDim &a, const SymDim &b) {
  if (a.isStatic(1))
    return b;
  if (b.isStatic(1))
    return a;
  if (a == b)
    return a;
  // A static dim other than 1 wins: the other must be 1 or equal to it.
  if (a.isStatic())
    return a;
  if (b.isStatic())
    return b;
  return SymDim::unknown();
}

/// Elementwise `fn` over two value vectors with broadcasting (each is the
/// flattened value of a tensor of rank <= 1).
std::optional<SymDims>
combineValues(const std::optional<SymDims> &a, const std::optional<SymDims> &b,
              llvm::function_ref<SymDim(const SymDim &, const SymDim &)> fn) {
  if (!a || !b)
    return std::nullopt;
  size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1))
    return std::nullopt;
  SymDims out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(fn((*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]));
  return out;
}

SymDim truncDiv(const SymDim &a, const SymDim &b) {
  if (a.isStatic() && b.isStatic()) {
    if (b.getStatic() == 0 || (a.getStatic() == INT64_MIN && b.getStatic() == -1))
      return SymDim::unknown();
    return SymDim::of(a.getStatic() / b.getStatic());
  }
  // Exact division of an expression: no rounding to worry about.
  return a.floorDiv(b);
}

SymDim boolDim(bool v) { return SymDim::of(v ? 1 : 0); }

/// a == b as 0/1 where provable: equal expressions are equal; a dim-like
/// expression (non-negative) never equals a negative constant (the -1 of
/// torch's Where(Equal(shape, -1), ...) idiom).
SymDim equalDims(const SymDim &a, const SymDim &b) {
  if (!a.isKnown() || !b.isKnown())
    return SymDim::unknown();
  if (a == b)
    return boolDim(true);
  if (a.isStatic() && b.isStatic())
    return boolDim(false);
  SymDim diff = a - b;
  if (diff.isStatic())
    return boolDim(diff.getStatic() == 0);
  if ((a.isNonNegative() && b.isStatic() && b.getStatic() < 0) ||
      (b.isNonNegative() && a.isStatic() && a.getStatic() < 0))
    return boolDim(false);
  return SymDim::unknown();
}

SymDim staticBinary(const SymDim &a, const SymDim &b,
                    llvm::function_ref<int64_t(int64_t, int64_t)> fn) {
  if (!a.isStatic() || !b.isStatic())
    return SymDim::unknown();
  return SymDim::of(fn(a.getStatic(), b.getStatic()));
}

/// The values a broadcasting op computes, for the ops that matter to shape
/// subgraphs.
std::optional<SymDims> broadcastValues(Operation *op, ShapeInferenceContext &ctx) {
  std::optional<SymDims> a = ctx.getValues(op->getOperand(0));
  std::optional<SymDims> b = ctx.getValues(op->getOperand(1));
  using Fn = std::function<SymDim(const SymDim &, const SymDim &)>;
  Fn fn;
  if (isa<AddOp>(op))
    fn = [](const SymDim &x, const SymDim &y) { return x + y; };
  else if (isa<SubOp>(op))
    fn = [](const SymDim &x, const SymDim &y) { return x - y; };
  else if (isa<MulOp>(op))
    fn = [](const SymDim &x, const SymDim &y) { return x * y; };
  else if (isa<DivOp>(op))
    fn = truncDiv;
  else if (isa<MaxOp>(op))
    fn = [](const SymDim &x, const SymDim &y) {
      return staticBinary(x, y, [](int64_t p, int64_t q) { return std::max(p, q); });
    };
  else if (isa<MinOp>(op))
    fn = [](const SymDim &x, const SymDim &y) {
      return staticBinary(x, y, [](int64_t p, int64_t q) { return std::min(p, q); });
    };
  else if (isa<EqualOp>(op))
    fn = equalDims;
  else if (isa<LessOp>(op))
    fn = [](const SymDim &x, const SymDim &y) {
      return staticBinary(x, y, [](int64_t p, int64_t q) -> int64_t { return p < q; });
    };
  else if (isa<GreaterOp>(op))
    fn = [](const SymDim &x, const SymDim &y) {
      return staticBinary(x, y, [](int64_t p, int64_t q) -> int64_t { return p > q; });
    };
  else if (isa<AndOp>(op))
    fn = [](const SymDim &x, const SymDim &y) {
      return staticBinary(x, y, [](int64_t p, int64_t q) -> int64_t { return p && q; });
    };
  else if (isa<OrOp>(op))
    fn = [](const SymDim &x, const SymDim &y) {
      return staticBinary(x, y, [](int64_t p, int64_t q) -> int64_t { return p || q; });
    };
  else
    return std::nullopt;
  return combineValues(a, b, fn);
}

} // namespace

namespace shape_fn {

Type elementTypeOf(Value v) { return cast<TensorType>(v.getType()).getElementType(); }

SymShape broadcastShapes(ArrayRef<SymShape> shapes) {
  int64_t rank = 0;
  for (const SymShape &s : shapes) {
    if (!s.ranked)
      return SymShape::unranked();
    rank = std::max(rank, s.getRank());
  }
  SymDims dims(rank, SymDim::of(1));
  for (const SymShape &s : shapes)
    for (int64_t i = 0; i < s.getRank(); ++i) {
      SymDim &d = dims[rank - s.getRank() + i];
      d = broadcastDim(d, s.dims[i]);
    }
  return SymShape::get(dims);
}

/// Records `values` for `result` when they are integers of a tracked size.
/// Call after setResult(): the importer's ops still have placeholder types.
void setIntValues(ShapeInferenceContext &ctx, Value result, std::optional<SymDims> values) {
  Type elementType = ctx.getInferredElementType(result);
  if (values && elementType && elementType.isInteger())
    ctx.setValues(result, std::move(*values));
}

/// A 1-D operand's values as dims, or `length` unknown dims when only its
/// length is static; nullopt when even that is unknown.
std::optional<SymDims> shapeOperandDims(ShapeInferenceContext &ctx, Value shape) {
  if (std::optional<SymDims> v = ctx.getValues(shape))
    return v;
  SymShape s = ctx.getShape(shape);
  // A shape vector longer than any real rank is left to the verifier and the
  // runtime rather than allocated here.
  if (s.ranked && s.getRank() == 1 && s.dims[0].isStatic() &&
      s.dims[0].getStatic() <= ShapeInferenceContext::kMaxTrackedElements)
    return SymDims(s.dims[0].getStatic(), SymDim::unknown());
  return std::nullopt;
}

} // namespace shape_fn

//===----------------------------------------------------------------------===//
// Families
//===----------------------------------------------------------------------===//

LogicalResult inferBroadcastOp(Operation *op, ShapeInferenceContext &ctx, ElemRule rule) {
  Type elementType = rule == ElemRule::Bool ? IntegerType::get(op->getContext(), 1)
                                            : elementTypeOf(op->getOperand(0));
  SymShape shape =
      broadcastShapes({ctx.getShape(op->getOperand(0)), ctx.getShape(op->getOperand(1))});
  Value result = op->getResult(0);
  ctx.setResult(result, elementType, shape);
  if (elementType.isInteger() && shape.ranked && shape.getRank() <= 1)
    if (std::optional<SymDims> values = broadcastValues(op, ctx))
      ctx.setValues(result, *values);
  return success();
}

LogicalResult inferUnaryOp(Operation *op, ShapeInferenceContext &ctx) {
  Value x = op->getOperand(0), y = op->getResult(0);
  ctx.setResult(y, elementTypeOf(x), ctx.getShape(x));
  std::optional<SymDims> values = ctx.getValues(x);
  if (!values)
    return success();
  if (isa<IdentityOp>(op)) {
    ctx.setValues(y, *values);
  } else if (isa<NegOp>(op)) {
    for (SymDim &d : *values)
      d = SymDim::of(0) - d;
    ctx.setValues(y, *values);
  }
  return success();
}

LogicalResult inferReduceOp(Operation *op, ShapeInferenceContext &ctx, int64_t keepdims,
                            int64_t noopWithEmptyAxes) {
  Value data = op->getOperand(0), result = op->getResult(0);
  SymShape in = ctx.getShape(data);
  Type elementType = elementTypeOf(data);
  std::optional<SmallVector<int64_t>> axes;
  if (op->getNumOperands() > 1)
    axes = ctx.getStaticValues(op->getOperand(1));
  else
    axes = SmallVector<int64_t>();
  if (!in.ranked || !axes) {
    SymShape out = SymShape::unranked();
    std::optional<int64_t> n;
    if (op->getNumOperands() > 1)
      n = staticAxesCount(ctx.getShape(op->getOperand(1)));
    if (in.ranked && keepdims)
      out = SymShape::get(SymDims(in.getRank(), SymDim::unknown()));
    else if (in.ranked && n && *n > 0 && *n <= in.getRank())
      out = SymShape::get(SymDims(in.getRank() - *n, SymDim::unknown()));
    else if (in.ranked && n && *n == 0)
      out = noopWithEmptyAxes ? in : SymShape::get({});
    ctx.setResult(result, elementType, out);
    return success();
  }
  if (axes->empty() && noopWithEmptyAxes) {
    ctx.setResult(result, elementType, in);
    return success();
  }
  SmallVector<bool> reduced(in.getRank(), axes->empty());
  for (int64_t axis : *axes) {
    std::optional<int64_t> a = normalizeAxis(axis, in.getRank());
    if (!a)
      return op->emitOpError() << "axis " << axis << " is out of range for rank " << in.getRank();
    reduced[*a] = true;
  }
  SymDims dims;
  for (auto [i, d] : llvm::enumerate(in.dims)) {
    if (!reduced[i])
      dims.push_back(d);
    else if (keepdims)
      dims.push_back(SymDim::of(1));
  }
  ctx.setResult(result, elementType, SymShape::get(dims));
  return success();
}

//===----------------------------------------------------------------------===//
// Single ops
//===----------------------------------------------------------------------===//

LogicalResult WhereOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape shape =
      broadcastShapes({ctx.getShape(getCondition()), ctx.getShape(getX()), ctx.getShape(getY())});
  ctx.setResult(getOutput(), elementTypeOf(getX()), shape);
  if (!shape.ranked || shape.getRank() > 1)
    return success();
  std::optional<SymDims> cond = ctx.getValues(getCondition());
  std::optional<SymDims> x = ctx.getValues(getX()), y = ctx.getValues(getY());
  if (!cond || !x || !y)
    return success();
  size_t n = std::max({cond->size(), x->size(), y->size()});
  for (const SymDims *v : {&*cond, &*x, &*y})
    if (v->size() != n && v->size() != 1)
      return success();
  auto at = [&](const SymDims &v, size_t i) { return v[v.size() == 1 ? 0 : i]; };
  SymDims values;
  for (size_t i = 0; i < n; ++i) {
    SymDim c = at(*cond, i);
    values.push_back(!c.isStatic() ? SymDim::unknown() : c.getStatic() ? at(*x, i) : at(*y, i));
  }
  setIntValues(ctx, getOutput(), values);
  return success();
}

LogicalResult IsNaNOp::inferShapes(ShapeInferenceContext &ctx) {
  ctx.setResult(getY(), IntegerType::get(getContext(), 1), ctx.getShape(getX()));
  return success();
}

LogicalResult MatMulOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape a = ctx.getShape(getA()), b = ctx.getShape(getB());
  Type elementType = elementTypeOf(getA());
  if (!a.ranked || !b.ranked || a.getRank() == 0 || b.getRank() == 0) {
    ctx.setResult(getY(), elementType, SymShape::unranked());
    return success();
  }
  SymShape batchA = SymShape::get(ArrayRef(a.dims).drop_back(a.getRank() >= 2 ? 2 : 1));
  SymShape batchB = SymShape::get(ArrayRef(b.dims).drop_back(b.getRank() >= 2 ? 2 : 1));
  SymShape out = broadcastShapes({batchA, batchB});
  if (a.getRank() >= 2)
    out.dims.push_back(a.dims[a.getRank() - 2]);
  if (b.getRank() >= 2)
    out.dims.push_back(b.dims.back());
  ctx.setResult(getY(), elementType, out);
  return success();
}

LogicalResult GemmOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape a = ctx.getShape(getA()), b = ctx.getShape(getB());
  SymDim m, n;
  if (a.ranked && a.getRank() == 2)
    m = a.dims[getTransA() ? 1 : 0];
  if (b.ranked && b.getRank() == 2)
    n = b.dims[getTransB() ? 0 : 1];
  ctx.setResult(getY(), elementTypeOf(getA()), SymShape::get({m, n}));
  return success();
}

LogicalResult LayerNormalizationOp::inferShapes(ShapeInferenceContext &ctx) {
  ctx.setResult(getY(), elementTypeOf(getX()), ctx.getShape(getX()));
  return success();
}

LogicalResult CastOp::inferShapes(ShapeInferenceContext &ctx) {
  Type to = getElementTypeForDType(getContext(), getTo());
  if (!to)
    return emitOpError() << "'to' = " << getTo() << " is not a kiln DType number";
  ctx.setResult(getOutput(), to, ctx.getShape(getInput()));
  // Integer to integer keeps the (small) values; i1 results become 0/1.
  if (elementTypeOf(getInput()).isInteger() && to.isInteger()) {
    std::optional<SymDims> values = ctx.getValues(getInput());
    if (values && to.isInteger(1))
      for (SymDim &d : *values)
        d = d.isStatic() ? SymDim::of(d.getStatic() != 0) : SymDim::unknown();
    setIntValues(ctx, getOutput(), values);
  }
  return success();
}

LogicalResult ClipOp::inferShapes(ShapeInferenceContext &ctx) {
  return inferUnaryOp(getOperation(), ctx);
}

LogicalResult CumSumOp::inferShapes(ShapeInferenceContext &ctx) {
  return inferUnaryOp(getOperation(), ctx);
}

LogicalResult TriluOp::inferShapes(ShapeInferenceContext &ctx) {
  return inferUnaryOp(getOperation(), ctx);
}

} // namespace kiln
