//===- KilnFolds.cpp - kiln op folders and canonicalizations --------------===//
//
// Folders evaluate ops on small constants (shape subgraphs) and remove
// identities (reshape to the same type, x + 0, identity transpose, ...).
// They never build a constant of more than kMaxFoldElements elements and only
// fold to a result type that is fully static.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"
#include "compiler/dialect/ShapeFunctions.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/TypeSwitch.h"

#include "mlir/IR/PatternMatch.h"
#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

/// The result type when it is static and small enough to fold into.
RankedTensorType foldableType(Value result) {
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!type || !type.hasStaticShape() || type.getNumElements() > kMaxFoldElements)
    return RankedTensorType();
  return type;
}

DenseElementsAttr denseOf(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || dense.getNumElements() > kMaxFoldElements)
    return DenseElementsAttr();
  return dense;
}

/// Row-major strides of a static shape.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// The linear index into `in` (numpy-broadcast to `out`) of output element
/// `index`.
int64_t broadcastIndex(int64_t index, ArrayRef<int64_t> out, ArrayRef<int64_t> in) {
  SmallVector<int64_t> outStrides = stridesOf(out), inStrides = stridesOf(in);
  int64_t offset = int64_t(out.size()) - int64_t(in.size()), linear = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t coord = (index / outStrides[i]) % out[i];
    int64_t j = int64_t(i) - offset;
    if (j >= 0 && in[j] != 1)
      linear += coord * inStrides[j];
  }
  return linear;
}

using IntFn = llvm::function_ref<std::optional<APInt>(const APInt &, const APInt &, bool)>;
using FloatFn = llvm::function_ref<std::optional<Attribute>(const APFloat &, const APFloat &)>;

/// Evaluates an elementwise binary op on two constants with broadcasting.
/// `intFn` gets the operands and whether they are unsigned; `floatFn` returns
/// the result element as an attribute (a float, or an i1 for comparisons).
Attribute foldBinary(Attribute lhs, Attribute rhs, Value result, IntFn intFn, FloatFn floatFn) {
  DenseElementsAttr a = denseOf(lhs), b = denseOf(rhs);
  RankedTensorType type = foldableType(result);
  if (!a || !b || !type || a.getElementType() != b.getElementType())
    return {};
  Type elem = a.getElementType(), resultElem = type.getElementType();
  SmallVector<Attribute> out;
  for (int64_t i = 0, n = type.getNumElements(); i < n; ++i) {
    int64_t ia = broadcastIndex(i, type.getShape(), a.getType().getShape());
    int64_t ib = broadcastIndex(i, type.getShape(), b.getType().getShape());
    if (auto intType = dyn_cast<IntegerType>(elem)) {
      std::optional<APInt> v = intFn(a.getValues<APInt>()[ia], b.getValues<APInt>()[ib],
                                     intType.isUnsigned() || intType.getWidth() == 1);
      if (!v)
        return {};
      out.push_back(IntegerAttr::get(resultElem, *v));
    } else if (isa<FloatType>(elem)) {
      std::optional<Attribute> v = floatFn(a.getValues<APFloat>()[ia], b.getValues<APFloat>()[ib]);
      if (!v || !*v)
        return {};
      out.push_back(*v);
    } else {
      return {};
    }
  }
  return DenseElementsAttr::get(type, out);
}

Attribute floatAttr(Value result, const APFloat &v) {
  return FloatAttr::get(cast<TensorType>(result.getType()).getElementType(), v);
}

Attribute boolAttr(Value result, bool v) {
  return IntegerAttr::get(IntegerType::get(result.getContext(), 1), v ? 1 : 0);
}

/// Folds a comparison given the three-way order of each element pair.
Attribute foldCompare(Operation *op, ArrayRef<Attribute> operands,
                      llvm::function_ref<bool(int)> pick) {
  Value result = op->getResult(0);
  return foldBinary(
      operands[0], operands[1], result,
      [&](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
        int order = isUnsigned ? (a.ult(b) ? -1
                                  : a == b ? 0
                                           : 1)
                               : (a.slt(b) ? -1
                                  : a == b ? 0
                                           : 1);
        return APInt(1, pick(order) ? 1 : 0);
      },
      [&](const APFloat &a, const APFloat &b) -> std::optional<Attribute> {
        APFloat::cmpResult c = a.compare(b);
        if (c == APFloat::cmpUnordered)
          return boolAttr(result, false);
        int order = c == APFloat::cmpLessThan ? -1 : c == APFloat::cmpEqual ? 0 : 1;
        return boolAttr(result, pick(order));
      });
}

/// `x op c` is x when c is a splat of `neutral` and the op does not change
/// x's type (e.g. x + 0, x * 1).
OpFoldResult foldNeutral(Value x, Attribute c, Value result, double neutral) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(c);
  if (!splat || x.getType() != result.getType())
    return {};
  Type elem = splat.getElementType();
  if (isa<FloatType>(elem)) {
    if (splat.getSplatValue<APFloat>().convertToDouble() != neutral)
      return {};
  } else if (splat.getSplatValue<APInt>().getSExtValue() != int64_t(neutral)) {
    return {};
  }
  return x;
}

/// Rebuilds `attr`'s elements with the result's (static) type: Reshape,
/// Squeeze, Unsqueeze and Identity of a constant.
OpFoldResult retype(Attribute attr, Value result) {
  DenseElementsAttr dense = denseOf(attr);
  RankedTensorType type = foldableType(result);
  if (!dense || !type || dense.getType().getNumElements() != type.getNumElements())
    return {};
  return dense.reshape(type);
}

} // namespace

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldNeutral(getA(), adaptor.getB(), getC(), 0))
    return r;
  if (OpFoldResult r = foldNeutral(getB(), adaptor.getA(), getC(), 0))
    return r;
  return foldBinary(
      adaptor.getA(), adaptor.getB(), getC(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> { return a + b; },
      [&](const APFloat &a, const APFloat &b) -> std::optional<Attribute> {
        return floatAttr(getC(), a + b);
      });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldNeutral(getA(), adaptor.getB(), getC(), 0))
    return r;
  return foldBinary(
      adaptor.getA(), adaptor.getB(), getC(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> { return a - b; },
      [&](const APFloat &a, const APFloat &b) -> std::optional<Attribute> {
        return floatAttr(getC(), a - b);
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldNeutral(getA(), adaptor.getB(), getC(), 1))
    return r;
  if (OpFoldResult r = foldNeutral(getB(), adaptor.getA(), getC(), 1))
    return r;
  return foldBinary(
      adaptor.getA(), adaptor.getB(), getC(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> { return a * b; },
      [&](const APFloat &a, const APFloat &b) -> std::optional<Attribute> {
        return floatAttr(getC(), a * b);
      });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldNeutral(getA(), adaptor.getB(), getC(), 1))
    return r;
  return foldBinary(
      adaptor.getA(), adaptor.getB(), getC(),
      [](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
        // Division by zero and INT_MIN / -1 are left to the runtime.
        if (b.isZero() || (!isUnsigned && a.isMinSignedValue() && b.isAllOnes()))
          return std::nullopt;
        return isUnsigned ? a.udiv(b) : a.sdiv(b);
      },
      [&](const APFloat &a, const APFloat &b) -> std::optional<Attribute> {
        return floatAttr(getC(), a / b);
      });
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  // Pow's operands may differ in type; x ^ 1 is the only fold worth having.
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(adaptor.getB());
      splat && getA().getType() == getC().getType()) {
    bool one = isa<FloatType>(splat.getElementType())
                   ? splat.getSplatValue<APFloat>().convertToDouble() == 1.0
                   : splat.getSplatValue<APInt>().getSExtValue() == 1;
    if (one)
      return getA();
  }
  return {};
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getA(), adaptor.getB(), getC(),
      [](const APInt &a, const APInt &b, bool u) -> std::optional<APInt> {
        return (u ? a.ugt(b) : a.sgt(b)) ? a : b;
      },
      [&](const APFloat &a, const APFloat &b) -> std::optional<Attribute> {
        return floatAttr(getC(), llvm::maximum(a, b));
      });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getA(), adaptor.getB(), getC(),
      [](const APInt &a, const APInt &b, bool u) -> std::optional<APInt> {
        return (u ? a.ult(b) : a.slt(b)) ? a : b;
      },
      [&](const APFloat &a, const APFloat &b) -> std::optional<Attribute> {
        return floatAttr(getC(), llvm::minimum(a, b));
      });
}

OpFoldResult EqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(*this, adaptor.getOperands(), [](int o) { return o == 0; });
}
OpFoldResult LessOp::fold(FoldAdaptor adaptor) {
  return foldCompare(*this, adaptor.getOperands(), [](int o) { return o < 0; });
}
OpFoldResult GreaterOp::fold(FoldAdaptor adaptor) {
  return foldCompare(*this, adaptor.getOperands(), [](int o) { return o > 0; });
}
OpFoldResult LessOrEqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(*this, adaptor.getOperands(), [](int o) { return o <= 0; });
}
OpFoldResult GreaterOrEqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(*this, adaptor.getOperands(), [](int o) { return o >= 0; });
}

static Attribute foldLogic(Attribute a, Attribute b, Value result,
                           llvm::function_ref<bool(bool, bool)> fn) {
  return foldBinary(
      a, b, result,
      [&](const APInt &x, const APInt &y, bool) -> std::optional<APInt> {
        return APInt(1, fn(!x.isZero(), !y.isZero()) ? 1 : 0);
      },
      [](const APFloat &, const APFloat &) -> std::optional<Attribute> { return std::nullopt; });
}

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  return foldLogic(adaptor.getA(), adaptor.getB(), getC(), [](bool x, bool y) { return x && y; });
}
OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  return foldLogic(adaptor.getA(), adaptor.getB(), getC(), [](bool x, bool y) { return x || y; });
}
OpFoldResult XorOp::fold(FoldAdaptor adaptor) {
  return foldLogic(adaptor.getA(), adaptor.getB(), getC(), [](bool x, bool y) { return x != y; });
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  // A splat condition picks one side (when that side already has the
  // result's type).
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(adaptor.getCondition())) {
    Value picked = splat.getSplatValue<bool>() ? getX() : getY();
    if (picked.getType() == getOutput().getType())
      return picked;
  }
  DenseElementsAttr c = denseOf(adaptor.getCondition()), x = denseOf(adaptor.getX()),
                    y = denseOf(adaptor.getY());
  RankedTensorType type = foldableType(getOutput());
  if (!c || !x || !y || !type)
    return {};
  SmallVector<Attribute> out;
  auto xs = x.getValues<Attribute>(), ys = y.getValues<Attribute>();
  auto cs = c.getValues<bool>();
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    bool pick = cs[broadcastIndex(i, type.getShape(), c.getType().getShape())];
    out.push_back(pick ? xs[broadcastIndex(i, type.getShape(), x.getType().getShape())]
                       : ys[broadcastIndex(i, type.getShape(), y.getType().getShape())]);
  }
  return DenseElementsAttr::get(type, out);
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

OpFoldResult foldUnaryOp(Operation *op, Attribute operand) {
  Value x = op->getOperand(0), y = op->getResult(0);
  if (isa<IdentityOp>(op))
    return x.getType() == y.getType() ? OpFoldResult(x) : OpFoldResult();
  DenseElementsAttr dense = denseOf(operand);
  if (!dense || !foldableType(y) || dense.getType() != y.getType())
    return {};
  Type elem = dense.getElementType();
  if (auto intType = dyn_cast<IntegerType>(elem)) {
    if (isa<NotOp>(op))
      return dense.mapValues(elem, [](const APInt &v) { return ~v; });
    if (isa<NegOp>(op))
      return dense.mapValues(elem, [](const APInt &v) { return -v; });
    if (isa<AbsOp>(op))
      return intType.isUnsigned() ? dense
                                  : dense.mapValues(elem, [](const APInt &v) { return v.abs(); });
    if (isa<ReluOp>(op))
      return dense.mapValues(elem, [](const APInt &v) {
        return v.isNegative() ? APInt::getZero(v.getBitWidth()) : v;
      });
    return {};
  }
  // Float math in double, rounded once to the element type (the scale
  // 1 / sqrt(head_dim) of attention is the usual customer).
  double (*fn)(double) =
      llvm::TypeSwitch<Operation *, double (*)(double)>(op)
          .Case([](SqrtOp) { return +[](double v) { return std::sqrt(v); }; })
          .Case([](ReciprocalOp) { return +[](double v) { return 1.0 / v; }; })
          .Case([](NegOp) { return +[](double v) { return -v; }; })
          .Case([](AbsOp) { return +[](double v) { return std::fabs(v); }; })
          .Case([](ExpOp) { return +[](double v) { return std::exp(v); }; })
          .Case([](LogOp) { return +[](double v) { return std::log(v); }; })
          .Case([](ErfOp) { return +[](double v) { return std::erf(v); }; })
          .Case([](TanhOp) { return +[](double v) { return std::tanh(v); }; })
          .Case([](SigmoidOp) { return +[](double v) { return 1.0 / (1.0 + std::exp(-v)); }; })
          .Case([](ReluOp) { return +[](double v) { return v < 0 ? 0.0 : v; }; })
          .Case([](FloorOp) { return +[](double v) { return std::floor(v); }; })
          .Case([](CeilOp) { return +[](double v) { return std::ceil(v); }; })
          .Case([](CosOp) { return +[](double v) { return std::cos(v); }; })
          .Case([](SinOp) { return +[](double v) { return std::sin(v); }; })
          .Default([](Operation *) { return nullptr; });
  if (!fn)
    return {};
  const llvm::fltSemantics &semantics = cast<FloatType>(elem).getFloatSemantics();
  SmallVector<APFloat> out;
  for (const APFloat &v : dense.getValues<APFloat>()) {
    APFloat r(fn(v.convertToDouble()));
    bool lost;
    r.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
    out.push_back(r);
  }
  return DenseElementsAttr::get(cast<ShapedType>(y.getType()), out);
}

//===----------------------------------------------------------------------===//
// Data movement and shape ops
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getOutput().getType())
    return getInput();
  DenseElementsAttr x = denseOf(adaptor.getInput());
  RankedTensorType type = foldableType(getOutput());
  if (!x || !type)
    return {};
  Type from = x.getElementType(), to = type.getElementType();
  bool fromUnsigned = from.isUnsignedInteger() || from.isInteger(1);
  SmallVector<Attribute> out;
  for (int64_t i = 0, n = x.getNumElements(); i < n; ++i) {
    if (auto toInt = dyn_cast<IntegerType>(to)) {
      unsigned width = toInt.getWidth();
      APInt v;
      if (isa<IntegerType>(from)) {
        APInt in = x.getValues<APInt>()[i];
        v = width == 1 ? APInt(1, !in.isZero())
                       : (fromUnsigned ? in.zextOrTrunc(width) : in.sextOrTrunc(width));
      } else {
        APFloat in = x.getValues<APFloat>()[i];
        if (width == 1) {
          v = APInt(1, !in.isZero());
        } else {
          // Out-of-range float to int conversion is undefined in ONNX; leave
          // it to the runtime rather than pick a value here.
          APSInt result(width, toInt.isUnsigned());
          bool exact;
          if (in.convertToInteger(result, APFloat::rmTowardZero, &exact) & APFloat::opInvalidOp)
            return {};
          v = result;
        }
      }
      out.push_back(IntegerAttr::get(to, v));
    } else {
      auto toFloat = cast<FloatType>(to);
      APFloat v(toFloat.getFloatSemantics());
      if (auto fromInt = dyn_cast<IntegerType>(from)) {
        v.convertFromAPInt(x.getValues<APInt>()[i], !fromUnsigned, APFloat::rmNearestTiesToEven);
      } else {
        v = x.getValues<APFloat>()[i];
        bool lost;
        v.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      }
      out.push_back(FloatAttr::get(to, v));
    }
  }
  return DenseElementsAttr::get(type, out);
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  auto in = dyn_cast<RankedTensorType>(getData().getType());
  if (in && in.hasStaticShape() && in == getReshaped().getType())
    return getData();
  return retype(adaptor.getData(), getReshaped());
}

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *) {
  // reshape(reshape(x, s1), s2) -> reshape(x, s2) when s2 cannot copy a dim
  // of the intermediate (no 0 entries, or allowzero).
  results.add(+[](ReshapeOp op, PatternRewriter &rewriter) -> LogicalResult {
    auto inner = op.getData().getDefiningOp<ReshapeOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not a reshape");
    std::optional<SmallVector<int64_t>> shape = getConstantIntValues(op.getShape());
    if (!op.getAllowzero() && (!shape || llvm::is_contained(*shape, 0)))
      return rewriter.notifyMatchFailure(op, "shape may copy a dim of the inner reshape");
    rewriter.modifyOpInPlace(op, [&] { op.getDataMutable().assign(inner.getData()); });
    return success();
  });
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if (int64_t(i) != p)
      return {};
  return getData().getType() == getTransposed().getType() ? OpFoldResult(getData())
                                                          : OpFoldResult();
}

OpFoldResult UnsqueezeOp::fold(FoldAdaptor adaptor) {
  return retype(adaptor.getData(), getExpanded());
}

OpFoldResult SqueezeOp::fold(FoldAdaptor adaptor) {
  return retype(adaptor.getData(), getSqueezed());
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  auto in = dyn_cast<RankedTensorType>(getInput().getType());
  if (in && in.hasStaticShape() && in == getOutput().getType())
    return getInput();
  DenseElementsAttr x = denseOf(adaptor.getInput());
  RankedTensorType type = foldableType(getOutput());
  if (!x || !type)
    return {};
  if (x.isSplat())
    return DenseElementsAttr::get(type, x.getSplatValue<Attribute>());
  SmallVector<Attribute> out;
  auto xs = x.getValues<Attribute>();
  for (int64_t i = 0; i < type.getNumElements(); ++i)
    out.push_back(xs[broadcastIndex(i, type.getShape(), x.getType().getShape())]);
  return DenseElementsAttr::get(type, out);
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto in = dyn_cast<RankedTensorType>(getData().getType());
  RankedTensorType type = foldableType(getShape());
  if (!in || !type)
    return {};
  auto [start, end] = shape_fn::shapeSliceBounds(getStart(), getEnd(), in.getRank());
  ArrayRef<int64_t> dims = in.getShape().slice(start, end - start);
  if (ShapedType::isDynamicShape(dims) || type.getNumElements() != int64_t(dims.size()))
    return {};
  return DenseElementsAttr::get(type, dims);
}

OpFoldResult SizeOp::fold(FoldAdaptor) {
  auto in = dyn_cast<RankedTensorType>(getData().getType());
  RankedTensorType type = foldableType(getSize());
  if (!in || !in.hasStaticShape() || !type || type.getRank() != 0)
    return {};
  return DenseElementsAttr::get(type, in.getNumElements());
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = denseOf(adaptor.getData()), indices = denseOf(adaptor.getIndices());
  RankedTensorType type = foldableType(getOutput());
  if (!data || !indices || !type)
    return {};
  ArrayRef<int64_t> shape = data.getType().getShape();
  std::optional<int64_t> axis = normalizeAxis(getAxis(), shape.size());
  if (!axis)
    return {};
  int64_t outer = 1, inner = 1, n = shape[*axis];
  for (int64_t i = 0; i < *axis; ++i)
    outer *= shape[i];
  for (size_t i = *axis + 1; i < shape.size(); ++i)
    inner *= shape[i];
  SmallVector<Attribute> out;
  auto values = data.getValues<Attribute>();
  for (int64_t o = 0; o < outer; ++o)
    for (const APInt &raw : indices.getValues<APInt>()) {
      int64_t idx = raw.getSExtValue();
      idx = idx < 0 ? idx + n : idx;
      if (idx < 0 || idx >= n)
        return {};
      for (int64_t i = 0; i < inner; ++i)
        out.push_back(values[(o * n + idx) * inner + i]);
    }
  if (int64_t(out.size()) != type.getNumElements())
    return {};
  return DenseElementsAttr::get(type, out);
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getConcatResult().getType())
    return getInputs()[0];
  RankedTensorType type = foldableType(getConcatResult());
  if (!type)
    return {};
  std::optional<int64_t> axis = normalizeAxis(getAxis(), type.getRank());
  SmallVector<DenseElementsAttr> parts;
  for (Attribute a : adaptor.getInputs()) {
    parts.push_back(denseOf(a));
    if (!parts.back() || !axis)
      return {};
  }
  int64_t outer = 1;
  for (int64_t i = 0; i < *axis; ++i)
    outer *= type.getShape()[i];
  SmallVector<Attribute> out;
  for (int64_t o = 0; o < outer; ++o)
    for (DenseElementsAttr part : parts) {
      int64_t chunk = outer ? part.getNumElements() / outer : 0;
      auto values = part.getValues<Attribute>();
      for (int64_t i = 0; i < chunk; ++i)
        out.push_back(values[o * chunk + i]);
    }
  if (int64_t(out.size()) != type.getNumElements())
    return {};
  return DenseElementsAttr::get(type, out);
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  auto in = dyn_cast<RankedTensorType>(getData().getType());
  std::optional<SmallVector<int64_t>> steps =
      getSteps() ? getConstantIntValues(getSteps()) : SmallVector<int64_t>();
  // Same static shape with positive steps can only mean start 0, step 1.
  if (in && in.hasStaticShape() && in == getOutput().getType() && steps &&
      llvm::all_of(*steps, [](int64_t s) { return s > 0; }))
    return getData();
  DenseElementsAttr data = denseOf(adaptor.getData());
  RankedTensorType type = foldableType(getOutput());
  std::optional<SmallVector<int64_t>> starts = getConstantIntValues(getStarts());
  std::optional<SmallVector<int64_t>> axes =
      getAxes() ? getConstantIntValues(getAxes()) : std::nullopt;
  if (!data || !type || !starts || !steps || (getAxes() && !axes))
    return {};
  int64_t rank = type.getRank();
  // Per dim: first index and step (untouched dims: 0 and 1).
  SmallVector<int64_t> first(rank, 0), step(rank, 1);
  ArrayRef<int64_t> inShape = data.getType().getShape();
  for (size_t i = 0; i < starts->size(); ++i) {
    std::optional<int64_t> a = normalizeAxis(axes ? (*axes)[i] : int64_t(i), rank);
    if (!a)
      return {};
    int64_t n = inShape[*a], s = (*starts)[i], k = steps->empty() ? 1 : (*steps)[i];
    if (k == 0)
      return {};
    s = s < 0 ? s + n : s;
    first[*a] = k > 0 ? std::clamp<int64_t>(s, 0, n) : std::clamp<int64_t>(s, 0, n - 1);
    step[*a] = k;
  }
  SmallVector<int64_t> outStrides = stridesOf(type.getShape()), inStrides = stridesOf(inShape);
  SmallVector<Attribute> out;
  auto values = data.getValues<Attribute>();
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    int64_t linear = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t coord = first[d] + ((i / outStrides[d]) % type.getShape()[d]) * step[d];
      if (coord < 0 || coord >= inShape[d])
        return {};
      linear += coord * inStrides[d];
    }
    out.push_back(values[linear]);
  }
  return DenseElementsAttr::get(type, out);
}

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor) {
  RankedTensorType type = foldableType(getOutput());
  if (!type)
    return {};
  Type elem = type.getElementType();
  double fill = getValue().convertToDouble();
  if (auto intType = dyn_cast<IntegerType>(elem)) {
    if (!(std::abs(fill) < 9.0e18))
      return {};
    return DenseElementsAttr::get(
        type, IntegerAttr::get(elem, APInt(intType.getWidth(), int64_t(fill), true)));
  }
  return DenseElementsAttr::get(type, FloatAttr::get(elem, fill));
}

OpFoldResult RangeOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr start = denseOf(adaptor.getStart()), delta = denseOf(adaptor.getDelta());
  RankedTensorType type = foldableType(getOutput());
  if (!start || !delta || !denseOf(adaptor.getLimit()) || !type)
    return {};
  Type elem = type.getElementType();
  // The result type came from shape inference; recheck its length so a
  // hand-written wrong type cannot fold to wrong values.
  auto scalar = [](DenseElementsAttr a) {
    return isa<FloatType>(a.getElementType())
               ? (*a.getValues<APFloat>().begin()).convertToDouble()
               : double((*a.getValues<APInt>().begin()).getSExtValue());
  };
  double count = std::ceil((scalar(denseOf(adaptor.getLimit())) - scalar(start)) / scalar(delta));
  if (!(count < 1e15) || std::max(count, 0.0) != double(type.getNumElements()))
    return {};
  SmallVector<Attribute> out;
  if (isa<FloatType>(elem)) {
    double s = (*start.getValues<APFloat>().begin()).convertToDouble();
    double d = (*delta.getValues<APFloat>().begin()).convertToDouble();
    for (int64_t i = 0; i < type.getNumElements(); ++i)
      out.push_back(FloatAttr::get(elem, s + double(i) * d));
  } else {
    APInt s = *start.getValues<APInt>().begin(), d = *delta.getValues<APInt>().begin();
    for (int64_t i = 0; i < type.getNumElements(); ++i)
      out.push_back(IntegerAttr::get(elem, s + d * APInt(s.getBitWidth(), i)));
  }
  return DenseElementsAttr::get(type, out);
}

} // namespace kiln
