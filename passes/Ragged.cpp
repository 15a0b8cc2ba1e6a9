//===- Ragged.cpp - kiln-ragged: a ragged batch over a paged KV cache -----===//
//
// Rewrites an injected decoder's @main from the model's own past/present KV
// interface to the serving engine's: one flat batch of tokens from many
// sequences, attention over a runtime-owned paged cache, and logits only for
// the rows that are sampled. The contract is in Passes.td. Everything is
// checked before anything changes, so a graph that cannot be rewritten is
// left exactly as it was, with the reason.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "passes/InjectUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

namespace kiln {

#define GEN_PASS_DEF_KILNRAGGED
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

constexpr llvm::StringLiteral kName = "kiln.name";
constexpr llvm::StringLiteral kDims = "kiln.dims";

StringRef nameOf(func::FuncOp f, unsigned i, bool result) {
  auto name = result ? f.getResultAttrOfType<StringAttr>(i, kName)
                     : f.getArgAttrOfType<StringAttr>(i, kName);
  return name ? name.getValue() : StringRef();
}

/// The argument named `name`, or null.
BlockArgument argNamed(func::FuncOp f, StringRef name) {
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (nameOf(f, i, false) == name)
      return f.getArgument(i);
  return nullptr;
}

/// past ++ new along the sequence dim (2 of 4), with past a
/// `past_key_values.*` argument: returns new.
Value newOfConcat(func::FuncOp f, Value kv) {
  auto concat = kv.getDefiningOp<ConcatOp>();
  if (!concat || concat.getInputs().size() != 2)
    return nullptr;
  int64_t axis = static_cast<int64_t>(concat.getAxis());
  if (axis != 2 && axis != -2)
    return nullptr;
  auto past = dyn_cast<BlockArgument>(concat.getInputs()[0]);
  if (!past || !nameOf(f, past.getArgNumber(), false).starts_with("past_key_values."))
    return nullptr;
  return concat.getInputs()[1];
}

/// For `x * c`, `c * x` or `x / c` with c a one-element constant: x.
Value unscaled(Value v) {
  Operation *op = v.getDefiningOp();
  if (!isa_and_nonnull<MulOp, DivOp>(op))
    return nullptr;
  Value a = op->getOperand(0), b = op->getOperand(1);
  if (inject::scalarConstant(b))
    return a;
  if (isa<MulOp>(op) && inject::scalarConstant(a))
    return b;
  return nullptr;
}

/// For the soft-cap `c * tanh(x / c)` (Gemma 2's final_logit_softcapping;
/// the scalings by constants in any spelling): x.
Value uncapped(Value v) {
  Value t = unscaled(v);
  auto tanh = t ? t.getDefiningOp<TanhOp>() : nullptr;
  return tanh ? unscaled(tanh.getX()) : nullptr;
}

/// The LM head that makes `logits`: a linear, through at most one cast to
/// f32 (a half model whose logits are upcast, as Hugging Face's
/// `logits.float()`), one scaling by a constant (Granite's
/// `logits / logits_scaling`) and one soft-cap (Gemma 2's), in any order.
LinearOp headOf(Value logits) {
  bool cast = false, scaled = false, capped = false;
  while (true) {
    if (auto upcast = logits.getDefiningOp<CastOp>(); upcast && !cast) {
      logits = upcast.getInput();
      cast = true;
    } else if (Value x = uncapped(logits); x && !capped) {
      logits = x;
      capped = true;
    } else if (Value x = unscaled(logits); x && !scaled) {
      logits = x;
      scaled = true;
    } else {
      return logits.getDefiningOp<LinearOp>();
    }
  }
}

/// The index operand of `gather(shape(x), i)` with x a `past_key_values.*`
/// argument and i the constant 2: the past length.
bool isPastLength(func::FuncOp f, Value v) {
  if (Operation *op = v.getDefiningOp();
      isa_and_nonnull<CastOp, UnsqueezeOp, SqueezeOp, ReshapeOp>(op))
    return isPastLength(f, op->getOperand(0));
  auto gather = v.getDefiningOp<GatherOp>();
  if (!gather || gather.getAxis() != 0)
    return false;
  auto shape = gather.getData().getDefiningOp<ShapeOp>();
  if (!shape)
    return false;
  auto past = dyn_cast<BlockArgument>(shape.getData());
  if (!past || !nameOf(f, past.getArgNumber(), false).starts_with("past_key_values."))
    return false;
  std::optional<double> i = inject::scalarConstant(gather.getIndices());
  return i && *i + static_cast<double>(shape.getStart()) == 2;
}

/// True when `v` is `gather(shape(x), 1)` with x input_ids or a gather of
/// rows by input_ids (the embeddings): the new tokens' count.
bool isSequenceLength(func::FuncOp f, Value v) {
  auto gather = v.getDefiningOp<GatherOp>();
  if (!gather || gather.getAxis() != 0)
    return false;
  auto shape = gather.getData().getDefiningOp<ShapeOp>();
  std::optional<double> i = inject::scalarConstant(gather.getIndices());
  if (!shape || !i || *i + static_cast<double>(shape.getStart()) != 1)
    return false;
  // The embeddings keep the token dim through casts and scalings by a
  // constant (Gemma's `* sqrt(hidden)`).
  Value x = shape.getData();
  while (Operation *op = x.getDefiningOp()) {
    if (isa<CastOp>(op))
      x = op->getOperand(0);
    else if (Value inner = unscaled(x))
      x = inner;
    else
      break;
  }
  if (auto rows = x.getDefiningOp<GatherOp>(); rows && rows.getAxis() == 0)
    x = rows.getIndices();
  return x == argNamed(f, "input_ids");
}

/// The positions of a model without a position_ids input that numbers its
/// new tokens from the past length, as Hugging Face's `cache_position`:
/// `range(past, past + seq_len, 1)`, past read from a past_key_values
/// input's sequence dim. Null when the graph has no such range.
RangeOp pastLengthPositions(func::FuncOp f) {
  RangeOp found;
  auto uncast = [](Value v) {
    while (auto cast = v.getDefiningOp<CastOp>())
      v = cast.getInput();
    return v;
  };
  f.walk([&](RangeOp range) {
    std::optional<double> delta = inject::scalarConstant(range.getDelta());
    Value start = uncast(range.getStart());
    auto limit = uncast(range.getLimit()).getDefiningOp<AddOp>();
    if (!delta || *delta != 1 || !limit || !isPastLength(f, start))
      return WalkResult::advance();
    Value a = uncast(limit.getA()), b = uncast(limit.getB());
    Value other = a == start ? b : b == start ? a : Value();
    if (!other || !isSequenceLength(f, other))
      return WalkResult::advance();
    found = range;
    return WalkResult::interrupt();
  });
  return found;
}

/// `v` through casts and one-value reshapes (Unsqueeze, Reshape, Squeeze,
/// a one-input Concat), as a slice bound's scalar becomes a [1] tensor.
Value throughScalarWrappers(Value v) {
  while (Operation *op = v.getDefiningOp()) {
    if (isa<CastOp, UnsqueezeOp, SqueezeOp, ReshapeOp>(op)) {
      v = op->getOperand(0);
    } else if (auto concat = dyn_cast<ConcatOp>(op); concat && concat.getInputs().size() == 1) {
      v = concat.getInputs()[0];
    } else {
      break;
    }
  }
  return v;
}

/// True when `v` is attention_mask, through casts.
bool isMask(func::FuncOp f, Value v) {
  while (auto cast = v.getDefiningOp<CastOp>())
    v = cast.getInput();
  return v && v == argNamed(f, "attention_mask");
}

/// For positions computed from the attention mask's running sum, as older
/// exports number them (OPT's `cumsum(mask) * mask - 1`, or Hugging Face's
/// `cumsum(mask) - 1` with the padding filled): the CumSum of the mask along
/// its token dim, with `shift` set so that on a mask of ones (a ragged batch
/// has no padding) `v` is position + shift. Looks through casts, adding or
/// subtracting a scalar constant, multiplying by the mask, and
/// where(mask == 0, c, x). Null for anything else.
CumSumOp maskCumSum(func::FuncOp f, Value v, int64_t &shift) {
  shift = 0;
  for (int steps = 0; steps < 16; ++steps) {
    Operation *op = v.getDefiningOp();
    if (auto cumsum = dyn_cast_or_null<CumSumOp>(op)) {
      auto axis = getConstantIntValues(cumsum.getAxis());
      auto type = dyn_cast<RankedTensorType>(cumsum.getInput().getType());
      if (!axis || axis->size() != 1 || !type || type.getRank() != 2 ||
          ((*axis)[0] != 1 && (*axis)[0] != -1) || cumsum.getExclusive() != 0 ||
          cumsum.getReverse() != 0 || !isMask(f, cumsum.getInput()))
        return nullptr;
      shift += 1; // the running sum of ones at position j is j + 1
      return cumsum;
    }
    if (isa_and_nonnull<CastOp>(op)) {
      v = op->getOperand(0);
    } else if (isa_and_nonnull<AddOp, SubOp>(op)) {
      Value a = op->getOperand(0), b = op->getOperand(1);
      std::optional<double> c = inject::scalarConstant(b);
      if (!c && isa<AddOp>(op) && (c = inject::scalarConstant(a)))
        std::swap(a, b);
      if (!c || *c != std::floor(*c))
        return nullptr;
      shift += static_cast<int64_t>(isa<AddOp>(op) ? *c : -*c);
      v = a;
    } else if (isa_and_nonnull<MulOp>(op)) {
      Value a = op->getOperand(0), b = op->getOperand(1);
      if (isMask(f, a))
        std::swap(a, b);
      if (!isMask(f, b))
        return nullptr;
      v = a;
    } else if (auto where = dyn_cast_or_null<WhereOp>(op)) {
      // where(mask == 0, c, x): x where the mask is 1.
      auto eq = where.getCondition().getDefiningOp<EqualOp>();
      if (!eq)
        return nullptr;
      Value m = eq.getA(), z = eq.getB();
      if (!isMask(f, m))
        std::swap(m, z);
      if (!isMask(f, m) || inject::scalarConstant(z) != 0.0)
        return nullptr;
      v = where.getY();
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

/// True when `v` is minus the new tokens' count: Neg of it, or 0 - it.
bool isMinusSequenceLength(func::FuncOp f, Value v) {
  v = throughScalarWrappers(v);
  if (auto neg = v.getDefiningOp<NegOp>())
    return isSequenceLength(f, throughScalarWrappers(neg.getX()));
  if (auto sub = v.getDefiningOp<SubOp>(); sub && inject::scalarConstant(sub.getA()) == 0.0)
    return isSequenceLength(f, throughScalarWrappers(sub.getB()));
  return false;
}

/// Positions from the mask's running sum, sliced to the new tokens:
/// slice(P, past, end) or slice(P, -seq_len, end) along dim 1, P as
/// maskCumSum reads it. Null when the graph has none; `shift` as there.
SliceOp maskCumSumPositions(func::FuncOp f, int64_t &shift) {
  SliceOp found;
  f.walk([&](SliceOp slice) {
    int64_t k = 0;
    auto type = dyn_cast<RankedTensorType>(slice.getOutput().getType());
    if (!type || type.getRank() != 2 || !type.getElementType().isInteger(64) ||
        !maskCumSum(f, slice.getData(), k))
      return WalkResult::advance();
    auto axes = slice.getAxes() ? getConstantIntValues(slice.getAxes()) : std::nullopt;
    auto ends = getConstantIntValues(slice.getEnds());
    auto steps = slice.getSteps() ? getConstantIntValues(slice.getSteps()) : std::nullopt;
    if (!axes || axes->size() != 1 || ((*axes)[0] != 1 && (*axes)[0] != -1) || !ends ||
        ends->size() != 1 || (*ends)[0] < (int64_t{1} << 30) ||
        (slice.getSteps() && (!steps || steps->size() != 1 || (*steps)[0] != 1)))
      return WalkResult::advance();
    Value start = throughScalarWrappers(slice.getStarts());
    if (!isPastLength(f, start) && !isMinusSequenceLength(f, slice.getStarts()))
      return WalkResult::advance();
    found = slice;
    shift = k;
    return WalkResult::interrupt();
  });
  return found;
}

struct Layer {
  AttentionOp attention;
  Value kNew, vNew;
};

/// Whether the computation of `mask` uses the constant `window` (or its
/// negation): the sliding-window masks' `kv > q - W`, `k <= q - W` or
/// `tril(ones, -W)`. Walks the mask's operands back to the inputs, but not
/// into what Shape or Size read: a tensor's shape brings its dims, not the
/// constants that computed it (a later layer's mask reads the shapes of
/// tensors an earlier layer made, whose constants may equal W).
bool maskUsesWindow(Value mask, int64_t window) {
  if (!mask)
    return false;
  SmallVector<Value> work{mask};
  llvm::SmallPtrSet<Operation *, 32> seen;
  const double w = static_cast<double>(window);
  while (!work.empty()) {
    Operation *op = work.pop_back_val().getDefiningOp();
    if (!op || isa<ShapeOp, SizeOp>(op) || !seen.insert(op).second)
      continue;
    for (Value operand : op->getOperands()) {
      if (std::optional<double> c = inject::scalarConstant(operand); c && std::abs(*c) == w)
        return true;
      work.push_back(operand);
    }
  }
  return false;
}

DictionaryAttr argAttrs(MLIRContext *ctx, StringRef name, ArrayRef<StringRef> dims) {
  Builder b(ctx);
  SmallVector<Attribute> dimAttrs;
  for (StringRef d : dims)
    dimAttrs.push_back(b.getStringAttr(d));
  return b.getDictionaryAttr({b.getNamedAttr(kName, b.getStringAttr(name)),
                              b.getNamedAttr(kDims, b.getArrayAttr(dimAttrs))});
}

struct RaggedPass : impl::KilnRaggedBase<RaggedPass> {
  using KilnRaggedBase::KilnRaggedBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto skip = [&](const Twine &why) {
      module->setAttr("kiln.ragged_skipped", StringAttr::get(&getContext(), why));
    };
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return skip("no @main function");

    std::string why;
    if (!analyze(main, nullptr, nullptr, why))
      return skip(why);
    // Rewrite a copy, so a graph that turns out to need the mask elsewhere
    // is left exactly as it was.
    func::FuncOp work = main.clone();
    work.setSymName("main.ragged");
    module.push_back(work);
    SmallVector<Layer> layers;
    LinearOp head;
    (void)analyze(work, &layers, &head, why);
    SmallVector<int64_t> windows = layerWindows(layers);
    rewrite(work, layers, windows, head);
    if (BlockArgument mask = argNamed(work, "attention_mask"); mask && !mask.use_empty()) {
      work.erase();
      return skip("the attention_mask feeds more than attention (e.g. the positions), which a "
                  "ragged batch has no mask for");
    }
    for (unsigned i = 0; i < work.getNumArguments(); ++i)
      if (nameOf(work, i, false).starts_with("past_key_values.")) {
        std::string what = nameOf(work, i, false).str();
        work.erase();
        return skip("the input " + what +
                    " feeds more than attention (e.g. the positions "
                    "through the past length another way), which a ragged batch has no past "
                    "tensors for");
      }
    main.erase();
    work.setSymName("main");
    module->setAttr("kiln.interface", StringAttr::get(&getContext(), "ragged"));
  }

  /// Whether `main` can be rewritten; fills `layers` and `head` when given,
  /// else `why` says what stops it.
  bool analyze(func::FuncOp main, SmallVectorImpl<Layer> *layers, LinearOp *head,
               std::string &why) {
    auto fail = [&](const Twine &reason) {
      why = reason.str();
      return false;
    };
    if (!argNamed(main, "input_ids"))
      return fail("no input_ids input");
    int64_t shift = 0;
    if (!argNamed(main, "position_ids") && !pastLengthPositions(main) &&
        !maskCumSumPositions(main, shift))
      return fail("no position_ids input, and the positions are neither the past length plus "
                  "0, 1, ... nor the attention mask's running sum sliced to the new tokens "
                  "(the model computes them another way, which a ragged batch has nothing for)");
    int found = 0;
    WalkResult walk = main.walk([&](Operation *op) {
      if (isa<SoftmaxOp>(op)) {
        fail("an attention was not injected (a Softmax is left)");
        return WalkResult::interrupt();
      }
      auto attention = dyn_cast<AttentionOp>(op);
      if (!attention)
        return WalkResult::advance();
      Layer layer{attention, newOfConcat(main, attention.getK()),
                  newOfConcat(main, attention.getV())};
      if (!layer.kNew || !layer.vNew) {
        fail("an attention's K or V is not past_key_values ++ the new tokens' along dim 2");
        return WalkResult::interrupt();
      }
      Type kvType = cast<TensorType>(layer.kNew.getType()).getElementType();
      if (!kvType.isF32() && !kvType.isF16() && !kvType.isBF16()) {
        fail("the KV cache is not f32, f16 or bf16");
        return WalkResult::interrupt();
      }
      ++found;
      if (layers)
        layers->push_back(layer);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return false;
    if (found == 0)
      return fail("no injected attention");
    auto ret = cast<func::ReturnOp>(main.front().getTerminator());
    LinearOp lm;
    for (unsigned i = 0; i < main.getNumResults(); ++i)
      if (nameOf(main, i, true) == "logits")
        lm = headOf(ret.getOperand(i));
    if (!lm || cast<TensorType>(lm.getX().getType()).getShape().size() != 3)
      return fail("the logits are not a linear of [batch, tokens, hidden] states");
    if (head)
      *head = lm;
    return true;
  }

  /// Each layer's sliding window (0: none), as the pass's description says.
  SmallVector<int64_t> layerWindows(ArrayRef<Layer> layers) {
    SmallVector<int64_t> windows(layers.size(), 0);
    if (slidingWindow <= 0)
      return windows;
    bool evidence = false;
    for (auto [i, layer] : llvm::enumerate(layers))
      if (maskUsesWindow(AttentionOp(layer.attention).getMask(), slidingWindow)) {
        windows[i] = slidingWindow;
        evidence = true;
      }
    if (evidence)
      return windows;
    const bool perLayer = slidingLayers.size() == layers.size();
    for (auto [i, w] : llvm::enumerate(windows))
      w = !perLayer || slidingLayers[i] != 0 ? slidingWindow : 0;
    return windows;
  }

  void rewrite(func::FuncOp main, ArrayRef<Layer> layers, ArrayRef<int64_t> windows,
               LinearOp head) {
    MLIRContext *ctx = &getContext();
    Location loc = main.getLoc();
    auto i64 = IntegerType::get(ctx, 64);
    auto vec = RankedTensorType::get({ShapedType::kDynamic}, i64);
    auto add = [&](Type type, StringRef name, ArrayRef<StringRef> dims) {
      unsigned index = main.getNumArguments();
      (void)main.insertArgument(index, type, argAttrs(ctx, name, dims), loc);
      return main.getArgument(index);
    };
    // Positions the model numbered from its past length become the engine's
    // position_ids, [1, T] as input_ids. (A model with position_ids may
    // number its tokens that way too, for its mask: that range dies with
    // the mask.)
    const bool hasPositions = static_cast<bool>(argNamed(main, "position_ids"));
    RangeOp range = hasPositions ? RangeOp() : pastLengthPositions(main);
    int64_t shift = 0;
    SliceOp slice = hasPositions || range ? SliceOp() : maskCumSumPositions(main, shift);
    auto positionsInput = [&] {
      BlockArgument ids = argNamed(main, "input_ids");
      auto dims = main.getArgAttrOfType<ArrayAttr>(ids.getArgNumber(), kDims);
      SmallVector<StringRef> names;
      if (dims)
        for (Attribute d : dims)
          names.push_back(cast<StringAttr>(d).getValue());
      return add(ids.getType(), "position_ids", names);
    };
    if (slice) {
      // The mask's running sum over a ragged batch of ones is position +
      // shift: the engine's position_ids, shifted, as [1, T].
      Value positions = positionsInput();
      OpBuilder at(slice);
      Location l = slice.getLoc();
      auto type = cast<RankedTensorType>(slice.getOutput().getType());
      auto shapeType = RankedTensorType::get({2}, i64);
      Value shape = at.create<ConstantOp>(
          l, shapeType, DenseElementsAttr::get(shapeType, ArrayRef<int64_t>{1, -1}), StringAttr());
      Value p = at.create<ReshapeOp>(l, type, positions, shape, at.getI64IntegerAttr(0));
      if (shift != 0) {
        auto scalar = RankedTensorType::get({}, i64);
        Value k =
            at.create<ConstantOp>(l, scalar, DenseElementsAttr::get(scalar, shift), StringAttr());
        p = at.create<AddOp>(l, type, p, k);
      }
      slice.getOutput().replaceAllUsesWith(p);
      slice.erase();
    }
    if (range) {
      Value positions = positionsInput();
      OpBuilder at(range);
      auto flatShape = RankedTensorType::get({1}, i64);
      Value minusOne = at.create<ConstantOp>(
          range.getLoc(), flatShape, DenseElementsAttr::get(flatShape, int64_t{-1}), StringAttr());
      auto flat = at.create<ReshapeOp>(range.getLoc(), range.getOutput().getType(), positions,
                                       minusOne, at.getI64IntegerAttr(0));
      range.getOutput().replaceAllUsesWith(flat.getReshaped());
      range.erase();
    }
    Value slots = add(vec, "kv_slots", {"num_tokens"});
    Value queryStart = add(vec, "query_start", {"num_seqs + 1"});
    Value contextLens = add(vec, "context_lens", {"num_seqs"});
    Value blockTables =
        add(RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, i64),
            "block_tables", {"num_seqs", "max_blocks"});
    Value logitsIndices = add(vec, "logits_indices", {"num_logits"});

    OpBuilder b(ctx);
    for (auto [i, layer] : llvm::enumerate(layers)) {
      auto cacheType = [&](Value fresh) {
        auto t = cast<RankedTensorType>(fresh.getType());
        return t.clone(
            {ShapedType::kDynamic, t.getDimSize(1), ShapedType::kDynamic, t.getDimSize(3)});
      };
      std::string prefix = "kv_cache." + std::to_string(i);
      Value kCache =
          add(cacheType(layer.kNew), prefix + ".key", {"num_blocks", "", "block_size", ""});
      Value vCache =
          add(cacheType(layer.vNew), prefix + ".value", {"num_blocks", "", "block_size", ""});
      AttentionOp a = layer.attention;
      b.setInsertionPoint(a);
      auto paged = b.create<PagedAttentionOp>(
          a.getLoc(), a.getOutput().getType(), a.getQ(), layer.kNew, layer.vNew, kCache, vCache,
          slots, queryStart, contextLens, blockTables, a.getScaleAttr(),
          /*layout: the default, bhsd*/ StringAttr(), a.getSoftcapAttr(),
          windows[i] > 0 ? b.getI64IntegerAttr(windows[i]) : IntegerAttr());
      a.getOutput().replaceAllUsesWith(paged.getOutput());
      a.erase();
    }

    // The LM head over the sampled rows only.
    b.setInsertionPoint(head);
    auto x = cast<RankedTensorType>(head.getX().getType());
    auto rows = b.create<GatherOp>(
        head.getLoc(), x.clone({x.getDimSize(0), ShapedType::kDynamic, x.getDimSize(2)}),
        head.getX(), logitsIndices, b.getI64IntegerAttr(1));
    auto y = cast<RankedTensorType>(head.getY().getType());
    auto logits = b.create<LinearOp>(
        head.getLoc(), y.clone({y.getDimSize(0), ShapedType::kDynamic, y.getDimSize(2)}),
        rows.getOutput(), head.getW(), head.getBias(), head.getActivationAttr());
    head.getY().replaceAllUsesWith(logits.getY());
    head.erase();
    // The upcast, scaling and soft-cap between the head and the logits
    // follow its new shape.
    for (Value v = logits.getY(); Operation *user = inject::soleUser(v);) {
      if (!isa<CastOp, MulOp, DivOp, TanhOp>(user))
        break;
      Value out = user->getResult(0);
      auto t = cast<RankedTensorType>(out.getType());
      out.setType(t.clone(cast<RankedTensorType>(v.getType()).getShape()));
      v = out;
    }
    // The logits' token dim is now the sampled rows'.
    for (unsigned i = 0; i < main.getNumResults(); ++i)
      if (auto dims = main.getResultAttrOfType<ArrayAttr>(i, kDims);
          dims && nameOf(main, i, true) == "logits" && dims.size() == 3) {
        SmallVector<Attribute> d(dims.begin(), dims.end());
        d[1] = b.getStringAttr("num_logits");
        main.setResultAttr(i, kDims, b.getArrayAttr(d));
      }

    dropPresentOutputs(main);
    IRRewriter rewriter(ctx);
    (void)runRegionDCE(rewriter, main.getBody());
    dropDeadInputs(main);
  }

  /// The present.* outputs (past ++ new) are the runtime's business now.
  void dropPresentOutputs(func::FuncOp main) {
    auto ret = cast<func::ReturnOp>(main.front().getTerminator());
    llvm::BitVector drop(main.getNumResults());
    for (unsigned i = 0; i < main.getNumResults(); ++i)
      drop[i] = nameOf(main, i, true).starts_with("present.");
    ret->eraseOperands(drop);
    (void)main.eraseResults(drop);
  }

  /// The past_key_values.* inputs and an attention_mask nothing reads.
  void dropDeadInputs(func::FuncOp main) {
    llvm::BitVector drop(main.getNumArguments());
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      StringRef name = nameOf(main, i, false);
      drop[i] = main.getArgument(i).use_empty() &&
                (name.starts_with("past_key_values.") || name == "attention_mask");
    }
    (void)main.eraseArguments(drop);
  }
};

} // namespace
} // namespace kiln
