//===- ConvertFloatType.cpp - kiln-convert-float-type: f32 to f16/bf16 ----===//
//
// Converts an f32 graph to half precision the way model.half() converts a
// PyTorch model; the contract is in Passes.td. Three steps per function:
// classify every value by where its precision comes from (forward), settle
// the values computed from constants only by what their readers need
// (backward), then retype, inserting a Cast where an f32 value that must stay
// f32 meets a converted one.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnDialect.h"
#include "compiler/dialect/KilnOps.h"
#include "passes/HalfFloat.h"
#include "passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"

#include <cstring>
#include <vector>

namespace kiln {

#define GEN_PASS_DEF_KILNCONVERTFLOATTYPE
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

/// Where a value's precision comes from.
enum class Kind : uint8_t {
  Neutral, // computed from constants only: takes the type its readers need
  Moved,   // constants' elements moved or selected by integer data (an Expand
           // of inv_freq, an embedding Gather): takes its readers' type too
  Data,    // an integer or bool tensor computed from graph inputs
  Keep,    // f32 computed from integer data (positions, masks): stays f32
  Half,    // converted to the target type
};

bool isFloatTensor(Type t) {
  auto s = dyn_cast<TensorType>(t);
  return s && isa<FloatType>(s.getElementType());
}

bool isF32Tensor(Type t) {
  auto s = dyn_cast<TensorType>(t);
  return s && s.getElementType().isF32();
}

/// Operands that a half op reads as they are when they stay f32: a norm's
/// scale and bias ([D] each) and rotary's cos/sin tables. Every backend reads
/// them in their own dtype, so f32 costs nothing but their few bytes, and
/// keeps 16 more bits of each (bf16's 8 significant bits round a norm scale
/// by up to 2^-9 per channel, in every layer).
bool readsF32(Operation *op, unsigned operand) {
  if (isa<RmsNormOp>(op))
    return operand == 1;
  if (isa<AddRmsNormOp, AddLayerNormOp>(op))
    return operand >= 2;
  if (isa<RotaryOp>(op))
    return operand >= 1;
  return false;
}

/// Ops whose float results only copy, move or select their float operands'
/// elements (or an attribute's, or zero), computing nothing: they add no
/// rounding. Trilu and ScatterND are how older exports (OPT, Falcon,
/// StableLM) build the causal mask from a finfo(float32).min fill: counted
/// here, that mask stays f32 with the integer data it is combined with.
bool movesElements(Operation *op) {
  if (auto c = dyn_cast<CastOp>(op))
    return isFloatTensor(c.getInput().getType());
  if (auto scatter = dyn_cast<ScatterNDOp>(op))
    return scatter.getReduction() == "none";
  return isa<ReshapeOp, TransposeOp, ConcatOp, SplitOp, SliceOp, GatherOp, GatherNDOp, UnsqueezeOp,
             SqueezeOp, ExpandOp, TileOp, FlattenOp, IdentityOp, WhereOp, ConstantOfShapeOp,
             TriluOp>(op);
}

class Converter {
public:
  Converter(func::FuncOp f, FloatType half) : f(f), half(half), b(f.getContext()) {}

  LogicalResult run() {
    for (Operation &op : f.front().without_terminator())
      ops.push_back(&op);
    classify();
    settleNeutral();
    return apply();
  }

private:
  Kind kindOf(Value v) const {
    auto it = kinds.find(v);
    return it == kinds.end() ? Kind::Data : it->second;
  }

  /// An op's precision, from its operands'.
  Kind opKind(Operation *op) const {
    if (isa<ConstantOp>(op))
      return Kind::Neutral;
    bool anyHalf = false, anyKeep = false, allNeutral = true, floats = false;
    for (Value v : op->getOperands()) {
      Kind k = kindOf(v);
      anyHalf |= k == Kind::Half;
      anyKeep |= k == Kind::Keep;
      allNeutral &= k == Kind::Neutral;
      floats |= isFloatTensor(v.getType());
    }
    for (Value r : op->getResults())
      floats |= isFloatTensor(r.getType());
    if (anyHalf)
      return Kind::Half;
    if (anyKeep)
      return Kind::Keep;
    if (allNeutral)
      return Kind::Neutral;
    if (!floats)
      return Kind::Data;
    // Constants' elements moved by data (an embedding Gather, an Expand of
    // inv_freq to the batch) are still the constants' values: their readers
    // decide. Integer data becoming float (positions, a mask) keeps f32's
    // precision; any other op that computes floats from data and constants
    // (the first norm of the embeddings) computes activations.
    if (movesElements(op))
      return Kind::Moved;
    return isa<CastOp>(op) ? Kind::Keep : Kind::Half;
  }

  void classify() {
    for (BlockArgument a : f.getArguments())
      kinds[a] = isFloatTensor(a.getType()) ? Kind::Half : Kind::Data;
    for (Operation *op : ops) {
      Kind k = opKind(op);
      context[op] = k;
      for (Value r : op->getResults())
        kinds[r] = isFloatTensor(r.getType()) || k == Kind::Neutral ? k : Kind::Data;
    }
  }

  /// Constant-only and moved ops take the precision of their readers, last
  /// reader first so that a chain of them settles from its end. One f32
  /// reader keeps the value f32 (its half readers get a Cast; a constant is
  /// converted for them instead).
  void settleNeutral() {
    for (Operation *op : llvm::reverse(ops)) {
      if (context[op] != Kind::Neutral && context[op] != Kind::Moved)
        continue;
      bool keep = false, toHalf = false;
      for (Value r : op->getResults())
        if (isFloatTensor(r.getType()))
          for (OpOperand &use : r.getUses()) {
            auto it = context.find(use.getOwner());
            if (it == context.end())
              continue; // the return: outputs are handled on their own
            bool f32 = readsF32(use.getOwner(), use.getOperandNumber());
            keep |= it->second == Kind::Keep || (it->second == Kind::Half && f32);
            toHalf |= it->second == Kind::Half && !f32;
          }
      Kind k = toHalf && !keep ? Kind::Half : Kind::Keep;
      context[op] = k;
      splitConstant[op] = toHalf && keep && isa<ConstantOp>(op);
      for (Value r : op->getResults())
        if (isFloatTensor(r.getType()))
          kinds[r] = k;
    }
  }

  TensorType halfOf(Type t) const { return cast<TensorType>(t).clone(half); }

  /// `v` cast to `elem`, one Cast per value, placed right after `v` is made.
  Value castTo(Value v, Type elem) {
    auto key = std::make_pair(v, elem);
    if (auto it = casts.find(key); it != casts.end())
      return it->second;
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(&f.front());
    std::optional<int64_t> dtype = getDTypeForElementType(elem);
    Value c = b.create<CastOp>(v.getLoc(), cast<TensorType>(v.getType()).clone(elem), v,
                               b.getI64IntegerAttr(dtype.value_or(0)));
    casts[key] = c;
    return c;
  }

  LogicalResult convertConstant(ConstantOp c);
  LogicalResult convertOp(Operation *op);
  void convertOutputs();

  LogicalResult apply() {
    for (BlockArgument a : f.getArguments())
      if (isF32Tensor(a.getType()))
        a.setType(halfOf(a.getType()));
    for (Operation *op : ops) {
      auto c = dyn_cast<ConstantOp>(op);
      if (c && splitConstant[op]) {
        b.setInsertionPointAfter(op);
        auto copy = cast<ConstantOp>(b.clone(*op));
        c.getOutput().replaceUsesWithIf(copy.getOutput(), [&](OpOperand &use) {
          return context.lookup(use.getOwner()) == Kind::Half &&
                 !readsF32(use.getOwner(), use.getOperandNumber());
        });
        if (failed(convertConstant(copy)))
          return failure();
        continue;
      }
      if (context[op] != Kind::Half)
        continue;
      if (failed(c ? convertConstant(c) : convertOp(op)))
        return failure();
    }
    convertOutputs();
    return success();
  }

  func::FuncOp f;
  FloatType half;
  OpBuilder b;
  std::vector<Operation *> ops;
  llvm::DenseMap<Value, Kind> kinds;
  llvm::DenseMap<Operation *, Kind> context;
  llvm::DenseMap<Operation *, bool> splitConstant;
  llvm::DenseMap<std::pair<Value, Type>, Value> casts;
};

/// The constant's f32 values, saturated and rounded, in place of the f32
/// ones. A weight mapped from the model gets a new heap blob of half the size.
LogicalResult Converter::convertConstant(ConstantOp c) {
  auto type = dyn_cast<RankedTensorType>(c.getOutput().getType());
  if (!type || !type.getElementType().isF32())
    return success();
  const bool bf16 = half.isBF16();
  auto newType = type.clone(half);
  ElementsAttr value = c.getValue();
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    std::vector<uint16_t> bits;
    if (dense.isSplat()) {
      float f = saturateToHalf(dense.getSplatValue<float>(), bf16);
      bits.resize(1);
      convertFloats(&f, bits.data(), 1, bf16);
    } else {
      for (float f : dense.getValues<float>()) {
        f = saturateToHalf(f, bf16);
        bits.push_back(bf16 ? floatToBFloat16Bits(f) : floatToHalfBits(f));
      }
    }
    ArrayRef<char> raw(reinterpret_cast<const char *>(bits.data()), bits.size() * 2);
    c.setValueAttr(DenseElementsAttr::getFromRawBuffer(newType, raw));
  } else if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    const uint64_t n = static_cast<uint64_t>(type.getNumElements());
    if (!blob || blob->getData().size() != n * sizeof(float))
      return c.emitError() << "weight data '" << resource.getRawHandle().getKey()
                           << "' is missing or has the wrong size";
    AsmResourceBlob out = HeapAsmResourceBlob::allocate(n * 2, alignof(uint64_t));
    const char *src = blob->getData().data();
    auto *dst = reinterpret_cast<uint16_t *>(out.getMutableData().data());
    // The source may be unaligned (mapped from the model file): copy a
    // piece at a time into an aligned buffer.
    float chunk[4096];
    for (uint64_t i = 0; i < n; i += 4096) {
      uint64_t m = std::min<uint64_t>(4096, n - i);
      std::memcpy(chunk, src + i * sizeof(float), m * sizeof(float));
      for (uint64_t j = 0; j < m; ++j)
        chunk[j] = saturateToHalf(chunk[j], bf16);
      convertFloats(chunk, dst + i, static_cast<int64_t>(m), bf16);
    }
    std::string key = (resource.getRawHandle().getKey() + (bf16 ? ".bf16" : ".f16")).str();
    c.setValueAttr(DenseResourceElementsAttr::get(newType, key, std::move(out)));
  } else {
    return c.emitError("a constant that is neither dense nor a resource cannot be converted");
  }
  c.getOutput().setType(newType);
  return success();
}

/// Retypes a half op: f32 operands that stay f32 elsewhere are cast, f32
/// results become half, and a Cast to f32 of a converted value goes away.
LogicalResult Converter::convertOp(Operation *op) {
  if (auto castOp = dyn_cast<CastOp>(op); castOp && isF32Tensor(castOp.getOutput().getType())) {
    auto in = dyn_cast<TensorType>(castOp.getInput().getType());
    if (in && in.getElementType() == half) {
      castOp.getOutput().replaceAllUsesWith(castOp.getInput());
      castOp.erase();
      return success();
    }
    castOp.setTo(*getDTypeForElementType(half));
    castOp.getOutput().setType(halfOf(castOp.getOutput().getType()));
    return success();
  }
  // A half fill is saturated as a constant is (the runtime converts the f32
  // attribute like a Cast, which would make finfo(float32).min -inf).
  if (auto fill = dyn_cast<ConstantOfShapeOp>(op); fill && isF32Tensor(fill.getOutput().getType()))
    fill.setValueAttr(
        b.getF32FloatAttr(saturateToHalf(fill.getValue().convertToFloat(), half.isBF16())));
  // rotary's cos and sin share one type: f32 only when both are.
  auto rotary = dyn_cast<RotaryOp>(op);
  bool mixedTables =
      rotary && isF32Tensor(rotary.getCos().getType()) != isF32Tensor(rotary.getSin().getType());
  for (OpOperand &operand : op->getOpOperands())
    if (isF32Tensor(operand.get().getType()) &&
        (mixedTables || !readsF32(op, operand.getOperandNumber())))
      operand.set(castTo(operand.get(), half));
  for (Value r : op->getResults())
    if (isF32Tensor(r.getType()))
      r.setType(halfOf(r.getType()));
  return success();
}

/// The KV cache outputs (present.*) keep the cache's type; every other
/// output that was f32 is cast back, so samplers read f32 logits.
void Converter::convertOutputs() {
  auto ret = cast<func::ReturnOp>(f.front().getTerminator());
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    Value v = ret.getOperand(i);
    auto name = f.getResultAttrOfType<StringAttr>(i, "kiln.name");
    bool kv = name && name.getValue().starts_with("present.");
    bool wasF32 = isF32Tensor(f.getFunctionType().getResult(i));
    if (kv && isF32Tensor(v.getType()))
      ret.setOperand(i, castTo(v, half));
    else if (!kv && wasF32 && !isF32Tensor(v.getType()) && isFloatTensor(v.getType()))
      ret.setOperand(i, castTo(v, b.getF32Type()));
  }
  f.setType(FunctionType::get(f.getContext(), f.front().getArgumentTypes(), ret.getOperandTypes()));
}

struct ConvertFloatTypePass : impl::KilnConvertFloatTypeBase<ConvertFloatTypePass> {
  using KilnConvertFloatTypeBase::KilnConvertFloatTypeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(&getContext());
    FloatType half;
    if (to == "f16")
      half = b.getF16Type();
    else if (to == "bf16")
      half = b.getBF16Type();
    if (!half) {
      module.emitError() << "kiln-convert-float-type: to must be f16 or bf16, got '" << to << "'";
      return signalPassFailure();
    }
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal() && failed(Converter(f, half).run()))
        return signalPassFailure();
  }
};

} // namespace
} // namespace kiln
