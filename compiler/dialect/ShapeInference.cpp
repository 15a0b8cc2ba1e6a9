//===- ShapeInference.cpp - symbolic shape lattice and drivers ------------===//

#include "compiler/dialect/ShapeInference.h"

#include "compiler/dialect/KilnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;

namespace kiln {

//===----------------------------------------------------------------------===//
// SymDim
//===----------------------------------------------------------------------===//

SymDim SymDim::of(int64_t value) {
  SymDim d;
  d.known = true;
  d.constant = value;
  return d;
}

SymDim SymDim::symbol(StringRef name) {
  SymDim d;
  d.known = true;
  d.terms.push_back({name.str(), 1});
  return d;
}

static bool isIdentifier(StringRef s) {
  if (s.empty() || !(llvm::isAlpha(s[0]) || s[0] == '_'))
    return false;
  return llvm::all_of(s, [](char c) { return llvm::isAlnum(c) || c == '_' || c == '.'; });
}

SymDim SymDim::parse(StringRef text) {
  StringRef rest = text.trim();
  if (rest.empty())
    return unknown();
  // Terms separated by '+' or '-'; each an identifier or an integer.
  SymDim sum = of(0);
  bool negate = false;
  while (!rest.empty()) {
    size_t end = rest.find_first_of("+-", 1);
    StringRef term = rest.substr(0, end).trim();
    int64_t value;
    SymDim d;
    if (isIdentifier(term))
      d = symbol(term);
    else if (!term.getAsInteger(10, value))
      d = of(value);
    else
      return symbol(text.trim());
    sum = negate ? sum - d : sum + d;
    if (!sum.isKnown())
      return symbol(text.trim());
    if (end == StringRef::npos)
      break;
    negate = rest[end] == '-';
    rest = rest.substr(end + 1).trim();
    if (rest.empty())
      return symbol(text.trim());
  }
  return sum;
}

bool SymDim::isNonNegative() const {
  if (!known || constant < 0)
    return false;
  return llvm::all_of(terms, [](const auto &t) { return t.second > 0; });
}

int64_t SymDim::toTypeDim() const {
  return isStatic() && constant >= 0 ? constant : ShapedType::kDynamic;
}

std::string SymDim::str() const {
  if (!known)
    return "";
  std::string out;
  for (const auto &[name, coeff] : terms) {
    int64_t c = coeff;
    if (!out.empty()) {
      out += c < 0 ? " - " : " + ";
      c = c < 0 ? -c : c;
    } else if (c == -1) {
      out += "-";
      c = 1;
    }
    if (c != 1)
      out += std::to_string(c) + "*";
    out += name;
  }
  if (out.empty())
    return std::to_string(constant);
  if (constant > 0)
    out += " + " + std::to_string(constant);
  else if (constant < 0 && constant != INT64_MIN)
    out += " - " + std::to_string(-constant);
  else if (constant < 0)
    return "";
  return out;
}

SymDim SymDim::operator+(const SymDim &other) const {
  if (!known || !other.known)
    return unknown();
  std::optional<int64_t> c = llvm::checkedAdd(constant, other.constant);
  if (!c)
    return unknown();
  SymDim d = of(*c);
  // Merge two sorted term lists.
  size_t i = 0, j = 0;
  while (i < terms.size() || j < other.terms.size()) {
    if (j == other.terms.size() || (i < terms.size() && terms[i].first < other.terms[j].first)) {
      d.terms.push_back(terms[i++]);
    } else if (i == terms.size() || other.terms[j].first < terms[i].first) {
      d.terms.push_back(other.terms[j++]);
    } else {
      std::optional<int64_t> k = llvm::checkedAdd(terms[i].second, other.terms[j].second);
      if (!k)
        return unknown();
      if (*k != 0)
        d.terms.push_back({terms[i].first, *k});
      ++i;
      ++j;
    }
  }
  return d;
}

SymDim SymDim::operator*(const SymDim &other) const {
  if (!known || !other.known)
    return unknown();
  if (!isStatic() && !other.isStatic())
    return unknown();
  const SymDim &expr = isStatic() ? other : *this;
  int64_t factor = isStatic() ? constant : other.constant;
  if (factor == 0)
    return of(0);
  std::optional<int64_t> c = llvm::checkedMul(expr.constant, factor);
  if (!c)
    return unknown();
  SymDim d = of(*c);
  for (const auto &[name, coeff] : expr.terms) {
    std::optional<int64_t> k = llvm::checkedMul(coeff, factor);
    if (!k)
      return unknown();
    d.terms.push_back({name, *k});
  }
  return d;
}

SymDim SymDim::operator-(const SymDim &other) const { return *this + other * of(-1); }

SymDim SymDim::floorDiv(const SymDim &other) const {
  if (!known || !other.isStatic() || other.constant == 0)
    return unknown();
  int64_t divisor = other.constant;
  if (isStatic()) {
    if (constant == INT64_MIN && divisor == -1)
      return unknown();
    int64_t q = constant / divisor;
    if ((constant % divisor != 0) && ((constant < 0) != (divisor < 0)))
      --q;
    return of(q);
  }
  if (constant % divisor != 0 || (divisor == -1 && constant == INT64_MIN))
    return unknown();
  SymDim d = of(constant / divisor);
  for (const auto &[name, coeff] : terms) {
    if (coeff % divisor != 0 || (divisor == -1 && coeff == INT64_MIN))
      return unknown();
    d.terms.push_back({name, coeff / divisor});
  }
  return d;
}

//===----------------------------------------------------------------------===//
// SymShape
//===----------------------------------------------------------------------===//

SymShape SymShape::get(ArrayRef<SymDim> dims) {
  SymShape s;
  s.ranked = true;
  s.dims.assign(dims.begin(), dims.end());
  return s;
}

SymShape SymShape::fromType(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return unranked();
  SymShape s;
  s.ranked = true;
  for (int64_t d : ranked.getShape())
    s.dims.push_back(ShapedType::isDynamic(d) ? SymDim::unknown() : SymDim::of(d));
  return s;
}

bool SymShape::isFullyStatic() const {
  return ranked && llvm::all_of(dims, [](const SymDim &d) { return d.isStatic(); });
}

bool SymShape::isFullyKnown() const {
  return ranked && llvm::all_of(dims, [](const SymDim &d) { return d.isKnown(); });
}

std::optional<int64_t> SymShape::getStaticNumElements() const {
  if (!isFullyStatic())
    return std::nullopt;
  int64_t n = 1;
  for (const SymDim &d : dims) {
    std::optional<int64_t> m = llvm::checkedMul(n, d.getStatic());
    if (!m || d.getStatic() < 0)
      return std::nullopt;
    n = *m;
  }
  return n;
}

std::optional<int64_t> staticAxesCount(const SymShape &axesShape) {
  if (!axesShape.ranked || axesShape.getRank() != 1 || !axesShape.dims[0].isStatic() ||
      axesShape.dims[0].getStatic() < 0)
    return std::nullopt;
  return axesShape.dims[0].getStatic();
}

TensorType SymShape::toType(Type elementType) const {
  if (!ranked)
    return UnrankedTensorType::get(elementType);
  SmallVector<int64_t> shape;
  for (const SymDim &d : dims)
    shape.push_back(d.toTypeDim());
  return RankedTensorType::get(shape, elementType);
}

//===----------------------------------------------------------------------===//
// ShapeInferenceContext
//===----------------------------------------------------------------------===//

SymShape ShapeInferenceContext::getShape(Value value) const {
  auto it = shapes.find(value);
  if (it != shapes.end())
    return it->second;
  return SymShape::fromType(value.getType());
}

DenseElementsAttr ShapeInferenceContext::getConstant(Value value) const {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return DenseElementsAttr();
  return dyn_cast<DenseElementsAttr>(constant.getValue());
}

std::optional<SymDims> ShapeInferenceContext::getValues(Value value) const {
  auto it = values.find(value);
  if (it != values.end())
    return it->second;
  DenseElementsAttr dense = getConstant(value);
  if (!dense || !dense.getElementType().isIntOrIndex() || dense.getType().getRank() > 1 ||
      dense.getNumElements() > kMaxTrackedElements)
    return std::nullopt;
  SymDims out;
  bool isBool = dense.getElementType().isInteger(1);
  for (const APInt &v : dense.getValues<APInt>())
    out.push_back(SymDim::of(isBool ? v.getZExtValue() : v.getSExtValue()));
  return out;
}

std::optional<SmallVector<int64_t>> ShapeInferenceContext::getStaticValues(Value value) const {
  std::optional<SymDims> vals = getValues(value);
  if (!vals)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const SymDim &d : *vals) {
    if (!d.isStatic())
      return std::nullopt;
    out.push_back(d.getStatic());
  }
  return out;
}

void ShapeInferenceContext::setResult(Value result, Type elementType, SymShape shape) {
  elementTypes[result] = elementType;
  shapes[result] = std::move(shape);
}

void ShapeInferenceContext::setValues(Value result, SymDims vals) {
  if (static_cast<int64_t>(vals.size()) > kMaxTrackedElements)
    return;
  if (llvm::none_of(vals, [](const SymDim &d) { return d.isKnown(); }))
    return;
  values[result] = std::move(vals);
}

//===----------------------------------------------------------------------===//
// Drivers
//===----------------------------------------------------------------------===//

/// Merges an inferred shape into a declared type's shape: static dims of the
/// type win over unknown ones, and a static disagreement is an error.
static FailureOr<SymShape> mergeShapes(const SymShape &declared, const SymShape &inferred,
                                       std::string &why) {
  if (!declared.ranked)
    return inferred;
  if (!inferred.ranked)
    return declared;
  if (declared.getRank() != inferred.getRank()) {
    why = "rank " + std::to_string(inferred.getRank()) + " but the type has rank " +
          std::to_string(declared.getRank());
    return failure();
  }
  SymShape merged = inferred;
  for (auto [i, d] : llvm::enumerate(declared.dims)) {
    if (!d.isStatic())
      continue;
    if (inferred.dims[i].isStatic() && inferred.dims[i] != d) {
      why = "dim " + std::to_string(i) + " = " + inferred.dims[i].str() + " but the type says " +
            d.str();
      return failure();
    }
    merged.dims[i] = d;
  }
  return merged;
}

LogicalResult inferOpShapes(Operation *op, ShapeInferenceContext &ctx, bool replaceTypes,
                            bool *changed) {
  auto iface = dyn_cast<ShapeInferenceOpInterface>(op);
  if (!iface)
    return success();
  if (failed(iface.inferShapes(ctx)))
    return failure();
  for (Value result : op->getResults()) {
    Type elementType = ctx.getInferredElementType(result);
    if (!elementType)
      continue;
    SymShape inferred = ctx.getShape(result);
    SymShape merged = inferred;
    if (!replaceTypes) {
      auto oldType = cast<TensorType>(result.getType());
      if (oldType.getElementType() != elementType)
        return op->emitOpError() << "result element type " << oldType.getElementType()
                                 << " differs from the inferred " << elementType;
      std::string why;
      FailureOr<SymShape> m = mergeShapes(SymShape::fromType(oldType), inferred, why);
      if (failed(m))
        return op->emitOpError() << "inferred result shape has " << why << " (type " << oldType
                                 << ")";
      merged = *m;
    }
    ctx.setResult(result, elementType, merged);
    Type newType = merged.toType(elementType);
    if (newType != result.getType()) {
      result.setType(newType);
      if (changed)
        *changed = true;
    }
  }
  return success();
}

void seedArgumentShapes(func::FuncOp func, ShapeInferenceContext &ctx) {
  for (BlockArgument arg : func.getArguments()) {
    SymShape shape = SymShape::fromType(arg.getType());
    auto dims = func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "kiln.dims");
    if (dims && shape.ranked && static_cast<int64_t>(dims.size()) == shape.getRank()) {
      for (auto [i, attr] : llvm::enumerate(dims)) {
        auto name = dyn_cast<StringAttr>(attr);
        if (name && !name.getValue().empty() && !shape.dims[i].isStatic())
          shape.dims[i] = SymDim::parse(name.getValue());
      }
    }
    ctx.setShape(arg, shape);
  }
}

LogicalResult inferFunctionShapes(func::FuncOp func, ShapeInferenceContext &ctx, bool *changed) {
  if (func.isExternal())
    return success();
  seedArgumentShapes(func, ctx);
  WalkResult walk = func.walk([&](Operation *op) {
    return failed(inferOpShapes(op, ctx, /*replaceTypes=*/false, changed)) ? WalkResult::interrupt()
                                                                           : WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  // The signature follows the returned values' (possibly refined) types.
  Block &body = func.getBody().back();
  if (body.empty() || !body.back().hasTrait<OpTrait::IsTerminator>())
    return success();
  SmallVector<Type> results(body.back().getOperandTypes());
  if (TypeRange(results) != func.getFunctionType().getResults()) {
    func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(), results));
    if (changed)
      *changed = true;
  }
  return success();
}

ArrayAttr getDimsAttr(MLIRContext *context, const SymShape &shape) {
  SmallVector<Attribute> names;
  for (const SymDim &d : shape.dims)
    names.push_back(StringAttr::get(context, d.isSymbolic() ? d.str() : ""));
  return ArrayAttr::get(context, names);
}

} // namespace kiln
