//===- InjectUtils.cpp - matching helpers for the injection patterns ------===//

#include "passes/InjectUtils.h"

#include "compiler/plan/WeightBytes.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace kiln::inject {

Value skipCasts(Value v) {
  while (auto cast = v.getDefiningOp<CastOp>()) {
    Type from = cast.getInput().getType().getElementType();
    Type to = cast.getOutput().getType().getElementType();
    if (!isa<FloatType>(from) || !isa<FloatType>(to))
      break;
    v = cast.getInput();
  }
  return v;
}

std::optional<double> scalarConstant(Value v) {
  // Exporters leave sqrt(head_dim) as Pow/Sqrt of constants.
  if (auto pow = v.getDefiningOp<PowOp>()) {
    std::optional<double> a = scalarConstant(pow.getA()), b = scalarConstant(pow.getB());
    if (a && b)
      return std::pow(*a, *b);
    return std::nullopt;
  }
  if (auto sqrt = v.getDefiningOp<SqrtOp>()) {
    if (std::optional<double> a = scalarConstant(sqrt.getX()); a && *a >= 0)
      return std::sqrt(*a);
    return std::nullopt;
  }
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || dense.getNumElements() != 1)
    return std::nullopt;
  Type t = dense.getElementType();
  if (isa<FloatType>(t))
    return (*dense.getValues<APFloat>().begin()).convertToDouble();
  if (t.isInteger(64) || t.isInteger(32))
    return static_cast<double>((*dense.getValues<APInt>().begin()).getSExtValue());
  return std::nullopt;
}

bool isKernelFloat(Value v) {
  Type t = cast<TensorType>(v.getType()).getElementType();
  return t.isF32() || t.isF16() || t.isBF16();
}

bool isConstant(Value v) { return v && v.getDefiningOp<ConstantOp>(); }

int64_t rankOf(Value v) {
  auto ranked = dyn_cast<RankedTensorType>(v.getType());
  return ranked ? ranked.getRank() : -1;
}

int64_t dimOf(Value v, int64_t i) {
  auto ranked = dyn_cast<RankedTensorType>(v.getType());
  if (!ranked)
    return -1;
  int64_t rank = ranked.getRank();
  if (i < 0)
    i += rank;
  if (i < 0 || i >= rank || ranked.isDynamicDim(i))
    return -1;
  return ranked.getDimSize(i);
}

bool isLastAxis(Value axes, int64_t rank) {
  auto values = getConstantIntValues(axes);
  if (!values || values->size() != 1)
    return false;
  int64_t a = (*values)[0];
  return a == -1 || (rank > 0 && a == rank - 1);
}

Value otherOperand(Operation *op, Value known) {
  if (op->getNumOperands() != 2)
    return nullptr;
  if (op->getOperand(0) == known)
    return op->getOperand(1);
  if (op->getOperand(1) == known)
    return op->getOperand(0);
  return nullptr;
}

Operation *soleUser(Value v) {
  if (!v.hasOneUse())
    return nullptr;
  return *v.getUsers().begin();
}

bool isStaticFloat(Value v, int64_t rank) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return isConstant(v) && type && isa<FloatType>(type.getElementType()) && type.hasStaticShape() &&
         type.getRank() == rank;
}

bool isStaticF32(Value v, int64_t rank) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return isConstant(v) && type && type.getElementType().isF32() && type.hasStaticShape() &&
         type.getRank() == rank;
}

std::optional<std::vector<float>> readF32Weight(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(constant.getValue().getType());
  if (!type || !type.getElementType().isF32() || !type.hasStaticShape())
    return std::nullopt;
  std::vector<float> data(static_cast<size_t>(type.getNumElements()));
  if (llvm::Error e =
          plan::writeWeightBytes(constant.getValue(), reinterpret_cast<uint8_t *>(data.data()))) {
    llvm::consumeError(std::move(e));
    return std::nullopt;
  }
  return data;
}

/// A new weight constant of `type` over `blob`, named `name`.
Value makeWeight(PatternRewriter &rewriter, Location loc, RankedTensorType type,
                 AsmResourceBlob blob, StringRef name) {
  // The resource key must print as an identifier (`onnx::W` does not), so the
  // IR text parses again; the blob manager makes it unique when taken.
  std::string key = name.str();
  for (char &c : key)
    if (!llvm::isAlnum(c) && c != '_' && c != '.')
      c = '_';
  auto attr = DenseResourceElementsAttr::get(type, key, std::move(blob));
  return rewriter.create<ConstantOp>(loc, type, attr, rewriter.getStringAttr(name));
}

Value makeF32Weight(PatternRewriter &rewriter, Location loc, RankedTensorType type,
                    ArrayRef<float> data, StringRef name) {
  return makeWeight(rewriter, loc, type, HeapAsmResourceBlob::allocateAndCopyInferAlign(data),
                    name);
}

namespace {

/// The plan-layout bytes of a static float constant (f32, f16 or bf16).
std::optional<std::vector<char>> readFloatWeightBytes(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  auto type = constant ? dyn_cast<RankedTensorType>(constant.getValue().getType()) : nullptr;
  if (!type || !isa<FloatType>(type.getElementType()) || !type.hasStaticShape())
    return std::nullopt;
  std::vector<char> bytes(static_cast<size_t>(type.getNumElements()) *
                          static_cast<size_t>(type.getElementTypeBitWidth() / 8));
  if (llvm::Error e =
          plan::writeWeightBytes(constant.getValue(), reinterpret_cast<uint8_t *>(bytes.data()))) {
    llvm::consumeError(std::move(e));
    return std::nullopt;
  }
  return bytes;
}

} // namespace

FailureOr<Value> concatColumns(PatternRewriter &rewriter, Location loc, ArrayRef<Value> parts,
                               StringRef name) {
  // Bytes are moved, not values, so the weights keep their type (an f16
  // model's weights stay f16).
  Type elem = cast<ShapedType>(parts.front().getType()).getElementType();
  int64_t rows = dimOf(parts.front(), 0), cols = 0;
  std::vector<std::vector<char>> datas;
  for (Value p : parts) {
    auto data = readFloatWeightBytes(p);
    if (!data || rankOf(p) != 2 || dimOf(p, 0) != rows ||
        cast<ShapedType>(p.getType()).getElementType() != elem)
      return failure();
    cols += dimOf(p, 1);
    datas.push_back(std::move(*data));
  }
  const size_t esize = elem.getIntOrFloatBitWidth() / 8;
  AsmResourceBlob blob =
      HeapAsmResourceBlob::allocate(static_cast<size_t>(rows * cols) * esize, alignof(uint64_t));
  char *out = blob.getMutableData().data();
  int64_t offset = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    int64_t n = dimOf(parts[i], 1);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out + (r * cols + offset) * esize, datas[i].data() + r * n * esize, n * esize);
    offset += n;
  }
  auto type = RankedTensorType::get({rows, cols}, elem);
  return makeWeight(rewriter, loc, type, std::move(blob), name);
}

FailureOr<Value> stackWeights(PatternRewriter &rewriter, Location loc, ArrayRef<Value> parts,
                              StringRef name) {
  auto first = cast<RankedTensorType>(parts.front().getType());
  if (!first.hasStaticShape())
    return failure();
  const size_t esize = first.getElementType().getIntOrFloatBitWidth() / 8;
  const size_t each = static_cast<size_t>(first.getNumElements()) * esize;
  AsmResourceBlob blob = HeapAsmResourceBlob::allocate(each * parts.size(), alignof(uint64_t));
  char *out = blob.getMutableData().data();
  for (auto [i, p] : llvm::enumerate(parts)) {
    auto data = readFloatWeightBytes(p);
    if (!data || p.getType() != first || data->size() != each)
      return failure();
    std::memcpy(out + i * each, data->data(), each);
  }
  SmallVector<int64_t> dims{static_cast<int64_t>(parts.size())};
  dims.append(first.getShape().begin(), first.getShape().end());
  return makeWeight(rewriter, loc, RankedTensorType::get(dims, first.getElementType()),
                    std::move(blob), name);
}

FailureOr<Value> concat1D(PatternRewriter &rewriter, Location loc, ArrayRef<Value> parts,
                          StringRef name) {
  Type elem = cast<ShapedType>(parts.front().getType()).getElementType();
  std::vector<char> out;
  for (Value p : parts) {
    auto data = readFloatWeightBytes(p);
    if (!data || rankOf(p) != 1 || cast<ShapedType>(p.getType()).getElementType() != elem)
      return failure();
    out.insert(out.end(), data->begin(), data->end());
  }
  const int64_t n = static_cast<int64_t>(out.size() / (elem.getIntOrFloatBitWidth() / 8));
  auto type = RankedTensorType::get({n}, elem);
  return makeWeight(rewriter, loc, type,
                    HeapAsmResourceBlob::allocateAndCopyWithAlign(out, alignof(uint64_t)), name);
}

FailureOr<Value> transposeWeight(PatternRewriter &rewriter, Location loc, Value w) {
  auto data = readF32Weight(w);
  if (!data || rankOf(w) != 2)
    return failure();
  int64_t rows = dimOf(w, 0), cols = dimOf(w, 1);
  std::vector<float> out(data->size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(c * rows + r)] = (*data)[static_cast<size_t>(r * cols + c)];
  auto type = RankedTensorType::get({cols, rows}, rewriter.getF32Type());
  return makeF32Weight(rewriter, loc, type, out, constantName(w) + ".T");
}

bool isPerChannelConstant(Value v, int64_t n, int64_t rank) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!isConstant(v) || !type || !type.hasStaticShape() ||
      type.getRank() > std::max<int64_t>(rank, 1) ||
      !isa<DenseElementsAttr, DenseResourceElementsAttr>(v.getDefiningOp<ConstantOp>().getValue()))
    return false;
  if (type.getNumElements() == 1)
    return scalarConstant(v).has_value();
  return n > 0 && type.getShape().back() == n && type.getNumElements() == n;
}

Value perChannelWeight(PatternRewriter &rewriter, Location loc, Value v, int64_t n) {
  auto type = cast<RankedTensorType>(v.getType());
  auto flat = RankedTensorType::get({n}, type.getElementType());
  if (type == flat)
    return v;
  if (type.getNumElements() == 1)
    return splatConstant(rewriter, loc, flat, *scalarConstant(v), constantName(v));
  return reshapedConstant(rewriter, loc, v, flat);
}

Value reshapedConstant(PatternRewriter &rewriter, Location loc, Value v, RankedTensorType type) {
  ElementsAttr value = v.getDefiningOp<ConstantOp>().getValue(), out;
  if (auto dense = dyn_cast<DenseElementsAttr>(value))
    out = dense.reshape(type);
  else
    out =
        DenseResourceElementsAttr::get(type, cast<DenseResourceElementsAttr>(value).getRawHandle());
  return rewriter.create<ConstantOp>(loc, type, out, rewriter.getStringAttr(constantName(v)));
}

Value splatConstant(PatternRewriter &rewriter, Location loc, RankedTensorType type, double value,
                    StringRef name) {
  auto attr = DenseElementsAttr::get(type, rewriter.getFloatAttr(type.getElementType(), value));
  return rewriter.create<ConstantOp>(loc, type, attr, rewriter.getStringAttr(name));
}

std::string unitScaleName(Location loc) {
  std::string node = locName(loc);
  return (node.empty() ? std::string("norm") : node) + ".unit_scale";
}

std::string constantName(Value v) {
  if (auto constant = v.getDefiningOp<ConstantOp>())
    if (auto name = constant.getName())
      return name->str();
  return "weight";
}

std::string locName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string n = locName(inner); !n.empty())
        return n;
  return "";
}

} // namespace kiln::inject
