//===- NodeImporter.cpp - one handler per supported ONNX op ---------------===//
//
// Each handler checks the node's inputs and attributes, applies ONNX
// defaults, upgrades older opset forms to the newest (opset 21) semantics
// and builds the kiln op(s). Result types are placeholders here; the graph
// importer infers them afterwards.
//
//===----------------------------------------------------------------------===//

#include "compiler/importer/GraphImporter.h"

#include "compiler/importer/ModelLoader.h"

#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

using namespace mlir;

namespace kiln::onnx_import {
namespace {

using Results = FailureOr<SmallVector<Value>>;

Results one(Value v) { return SmallVector<Value>{v}; }

Type elementTypeOf(Value v) { return cast<TensorType>(v.getType()).getElementType(); }

IntegerAttr i64(NodeContext &ctx, int64_t v) { return ctx.builder.getI64IntegerAttr(v); }

template <typename OpT> Results binary(NodeContext &ctx) {
  if (failed(ctx.expectInputs(2, 2)))
    return failure();
  return one(ctx.create<OpT>(1, ctx.f32(), ctx.input(0), ctx.input(1)).getResult());
}

template <typename OpT> Results unary(NodeContext &ctx) {
  if (failed(ctx.expectInputs(1, 1)))
    return failure();
  return one(ctx.create<OpT>(1, ctx.f32(), ctx.input(0)).getResult());
}

/// ONNX Max/Min take one or more inputs; kiln's take two, so longer lists
/// become a chain and a single input is an identity.
template <typename OpT> Results variadic(NodeContext &ctx) {
  if (failed(ctx.expectInputs(1, ctx.node.input_size() ? ctx.node.input_size() : 1)))
    return failure();
  for (Value v : ctx.inputs)
    if (!v)
      return ctx.error() << "inputs must not be omitted";
  if (ctx.inputs.size() == 1)
    return one(ctx.create<IdentityOp>(1, ctx.f32(), ctx.input(0)).getResult());
  Value acc = ctx.input(0);
  for (Value next : ArrayRef(ctx.inputs).drop_front())
    acc = ctx.create<OpT>(1, ctx.f32(), acc, next).getResult();
  return one(acc);
}

template <typename OpT> Results softmaxLike(NodeContext &ctx) {
  FailureOr<int64_t> axis = ctx.intAttr("axis", -1);
  if (failed(ctx.expectInputs(1, 1)) || failed(axis))
    return failure();
  return one(ctx.create<OpT>(1, ctx.f32(), ctx.input(0), i64(ctx, *axis)).getResult());
}

/// Reductions. `axesInputSince` is the opset that moved `axes` from an
/// attribute to an input (13 for ReduceSum, 18 for the others).
template <typename OpT, int64_t axesInputSince> Results reduce(NodeContext &ctx) {
  FailureOr<int64_t> keepdims = ctx.intAttr("keepdims", 1);
  FailureOr<int64_t> noop = ctx.intAttr("noop_with_empty_axes", 0);
  FailureOr<std::optional<SmallVector<int64_t>>> axesAttr = ctx.intsAttr("axes");
  if (failed(keepdims) || failed(noop) || failed(axesAttr))
    return failure();
  Value axes;
  if (ctx.opset < axesInputSince) {
    if (failed(ctx.expectInputs(1, 1)))
      return failure();
    if (*axesAttr)
      axes = ctx.constI64(**axesAttr);
  } else {
    if (failed(ctx.expectInputs(1, 2)))
      return failure();
    if (*axesAttr)
      return ctx.error() << "'axes' is an input since opset " << axesInputSince
                         << ", not an attribute";
    axes = ctx.input(1);
  }
  return one(ctx.create<OpT>(1, ctx.f32(), ctx.input(0), axes, i64(ctx, *keepdims), i64(ctx, *noop))
                 .getResult());
}

Results importGemm(NodeContext &ctx) {
  FailureOr<float> alpha = ctx.floatAttr("alpha", 1.0f), beta = ctx.floatAttr("beta", 1.0f);
  FailureOr<int64_t> transA = ctx.intAttr("transA", 0), transB = ctx.intAttr("transB", 0);
  if (failed(ctx.expectInputs(2, 3)) || failed(alpha) || failed(beta) || failed(transA) ||
      failed(transB))
    return failure();
  return one(ctx.create<GemmOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), ctx.input(2),
                                ctx.builder.getF32FloatAttr(*alpha),
                                ctx.builder.getF32FloatAttr(*beta), i64(ctx, *transA),
                                i64(ctx, *transB))
                 .getResult());
}

/// LayerNormalization's optional Mean and InvStdDev outputs, which decoders
/// never use, are built from primitive ops (in the stash type, f32) so the
/// fused op keeps one result: Mean = ReduceMean(X) over axis..rank-1 and
/// InvStdDev = 1 / sqrt(ReduceMean((X - Mean)^2) + epsilon), both keepdims.
Results layerNormStats(NodeContext &ctx, Value y, int64_t axis, float epsilon, int64_t stash) {
  if (stash != 1)
    return ctx.error() << "Mean and InvStdDev outputs need stash_type 1 (float), got " << stash;
  Value x = ctx.input(0);
  // The axes list has one entry per normalized dim, so the axis must be
  // checked against the rank before it sizes anything: a file's axis of
  // -2^38 would otherwise ask for a list of 2^38 entries.
  auto ranked = dyn_cast<RankedTensorType>(x.getType());
  if (!ranked)
    return ctx.error() << "Mean and InvStdDev outputs need the input's rank";
  int64_t rank = ranked.getRank();
  if (axis < -rank || axis >= rank)
    return ctx.error() << "axis " << axis << " is out of range for an input of rank " << rank
                       << " (expected " << -rank << " to " << rank - 1 << ")";
  SmallVector<int64_t> axes;
  for (int64_t a = axis < 0 ? axis + rank : axis; a < rank; ++a)
    axes.push_back(axis < 0 ? a - rank : a);
  Type f32 = ctx.f32();
  if (!elementTypeOf(x).isF32())
    x = ctx.create<CastOp>(1, f32, x, i64(ctx, /*kiln DType F32=*/1)).getResult();
  Value axesValue = ctx.constI64(axes);
  auto mean = [&](Value v) {
    return ctx.create<ReduceMeanOp>(1, f32, v, axesValue, i64(ctx, 1), i64(ctx, 0)).getResult();
  };
  Value m = mean(x);
  if (ctx.node.output_size() < 3 || ctx.node.output(2).empty())
    return SmallVector<Value>{y, m};
  Value d = ctx.create<SubOp>(1, f32, x, m).getResult();
  Value var = mean(ctx.create<MulOp>(1, f32, d, d).getResult());
  Value eps = ctx.constant(DenseElementsAttr::get(RankedTensorType::get({}, f32), epsilon));
  Value stddev =
      ctx.create<SqrtOp>(1, f32, ctx.create<AddOp>(1, f32, var, eps).getResult()).getResult();
  Value inv = ctx.create<ReciprocalOp>(1, f32, stddev).getResult();
  return SmallVector<Value>{y, m, inv};
}

Results importLayerNorm(NodeContext &ctx) {
  FailureOr<int64_t> axis = ctx.intAttr("axis", -1), stash = ctx.intAttr("stash_type", 1);
  FailureOr<float> epsilon = ctx.floatAttr("epsilon", 1e-5f);
  if (failed(ctx.expectInputs(2, 3)) || failed(axis) || failed(stash) || failed(epsilon))
    return failure();
  Value y = ctx.create<LayerNormalizationOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), ctx.input(2),
                                             i64(ctx, *axis), ctx.builder.getF32FloatAttr(*epsilon),
                                             i64(ctx, *stash))
                .getResult();
  bool wantStats = false;
  for (int i = 1; i < ctx.node.output_size(); ++i)
    wantStats |= !ctx.node.output(i).empty();
  if (!wantStats)
    return one(y);
  return layerNormStats(ctx, y, *axis, *epsilon, *stash);
}

Results importCast(NodeContext &ctx) {
  FailureOr<int64_t> to = ctx.intAttr("to");
  if (failed(ctx.expectInputs(1, 1)) || failed(to))
    return failure();
  Type elementType = getElementType(ctx.builder.getContext(), int32_t(*to));
  std::optional<int64_t> dtype = elementType ? getDTypeForElementType(elementType) : std::nullopt;
  if (!dtype)
    return ctx.error() << "cast to " << onnxTypeName(int32_t(*to)) << " is not supported";
  return one(ctx.create<CastOp>(1, elementType, ctx.input(0), i64(ctx, *dtype)).getResult());
}

Results importReshape(NodeContext &ctx) {
  FailureOr<int64_t> allowzero = ctx.intAttr("allowzero", 0);
  if (failed(ctx.expectInputs(2, 2)) || failed(allowzero))
    return failure();
  return one(ctx.create<ReshapeOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), i64(ctx, *allowzero))
                 .getResult());
}

Results importTranspose(NodeContext &ctx) {
  FailureOr<std::optional<SmallVector<int64_t>>> perm = ctx.intsAttr("perm");
  if (failed(ctx.expectInputs(1, 1)) || failed(perm))
    return failure();
  SmallVector<int64_t> order;
  if (*perm) {
    order = **perm;
  } else {
    // ONNX's default reverses the dims, which needs the rank.
    auto ranked = dyn_cast<RankedTensorType>(ctx.input(0).getType());
    if (!ranked)
      return ctx.error() << "Transpose without 'perm' needs an input of known rank";
    for (int64_t i = ranked.getRank() - 1; i >= 0; --i)
      order.push_back(i);
  }
  return one(
      ctx.create<TransposeOp>(1, ctx.f32(), ctx.input(0), ctx.builder.getDenseI64ArrayAttr(order))
          .getResult());
}

Results importConcat(NodeContext &ctx) {
  FailureOr<int64_t> axis = ctx.intAttr("axis");
  if (failed(axis) || failed(ctx.expectInputs(1, ctx.node.input_size() + 1)))
    return failure();
  for (Value v : ctx.inputs)
    if (!v)
      return ctx.error() << "inputs must not be omitted";
  return one(
      ctx.create<ConcatOp>(1, ctx.f32(), ValueRange(ctx.inputs), i64(ctx, *axis)).getResult());
}

Results importSplit(NodeContext &ctx) {
  FailureOr<int64_t> axis = ctx.intAttr("axis", 0);
  FailureOr<int64_t> numOutputs = ctx.intAttr("num_outputs", 0);
  if (failed(ctx.expectInputs(1, 2)) || failed(axis) || failed(numOutputs))
    return failure();
  int64_t n = ctx.node.output_size();
  if (n < 1)
    return ctx.error() << "needs at least one output";
  if (*numOutputs != 0 && *numOutputs != n)
    return ctx.error() << "num_outputs = " << *numOutputs << " but the node has " << n
                       << " outputs";
  // Before opset 18 a Split without `split` cut equal parts for each output:
  // num_outputs = the output count says the same in the newest form.
  int64_t parts = ctx.input(1) ? 0 : n;
  auto op = ctx.create<SplitOp>(unsigned(n), ctx.f32(), ctx.input(0), ctx.input(1), i64(ctx, *axis),
                                i64(ctx, parts));
  return SmallVector<Value>(op.getResults());
}

Results importSlice(NodeContext &ctx) {
  if (failed(ctx.expectInputs(3, 5)))
    return failure();
  return one(ctx.create<SliceOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), ctx.input(2),
                                 ctx.input(3), ctx.input(4))
                 .getResult());
}

Results importGather(NodeContext &ctx) {
  FailureOr<int64_t> axis = ctx.intAttr("axis", 0);
  if (failed(ctx.expectInputs(2, 2)) || failed(axis))
    return failure();
  return one(
      ctx.create<GatherOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), i64(ctx, *axis)).getResult());
}

Results importGatherND(NodeContext &ctx) {
  FailureOr<int64_t> batchDims = ctx.intAttr("batch_dims", 0);
  if (failed(ctx.expectInputs(2, 2)) || failed(batchDims))
    return failure();
  return one(ctx.create<GatherNDOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), i64(ctx, *batchDims))
                 .getResult());
}

/// ScatterND's `reduction` appeared in opset 16 (none, add, mul); opset 18
/// added max and min.
Results importScatterND(NodeContext &ctx) {
  FailureOr<std::string> reduction = ctx.stringAttr("reduction", StringRef("none"));
  if (failed(ctx.expectInputs(3, 3)) || failed(reduction))
    return failure();
  if (ctx.opset < 16 && ctx.findAttr("reduction"))
    return ctx.error() << "attribute 'reduction' exists only since opset 16";
  if (ctx.opset < 18 && (*reduction == "max" || *reduction == "min"))
    return ctx.error() << "reduction '" << *reduction << "' needs opset 18";
  return one(ctx.create<ScatterNDOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), ctx.input(2),
                                     ctx.builder.getStringAttr(*reduction))
                 .getResult());
}

Results importUnsqueeze(NodeContext &ctx) {
  if (failed(ctx.expectInputs(2, 2)))
    return failure();
  return one(ctx.create<UnsqueezeOp>(1, ctx.f32(), ctx.input(0), ctx.input(1)).getResult());
}

Results importSqueeze(NodeContext &ctx) {
  if (failed(ctx.expectInputs(1, 2)))
    return failure();
  return one(ctx.create<SqueezeOp>(1, ctx.f32(), ctx.input(0), ctx.input(1)).getResult());
}

Results importShape(NodeContext &ctx) {
  FailureOr<int64_t> start = ctx.intAttr("start", 0);
  if (failed(ctx.expectInputs(1, 1)) || failed(start))
    return failure();
  // ONNX's default end is the rank; an unranked input gets INT64_MAX, which
  // clamps to the rank.
  auto ranked = dyn_cast<RankedTensorType>(ctx.input(0).getType());
  FailureOr<int64_t> end = ctx.intAttr("end", ranked ? ranked.getRank() : INT64_MAX);
  if (failed(end))
    return failure();
  return one(ctx.create<ShapeOp>(1, ctx.builder.getI64Type(), ctx.input(0), i64(ctx, *start),
                                 i64(ctx, *end))
                 .getResult());
}

Results importSize(NodeContext &ctx) {
  if (failed(ctx.expectInputs(1, 1)))
    return failure();
  return one(ctx.create<SizeOp>(1, ctx.builder.getI64Type(), ctx.input(0)).getResult());
}

Results importConstantOfShape(NodeContext &ctx) {
  if (failed(ctx.expectInputs(1, 1)))
    return failure();
  Type elementType = ctx.f32();
  double fill = 0.0;
  if (const onnx::AttributeProto *value = ctx.findAttr("value")) {
    std::string error;
    FailureOr<ElementsAttr> attr = value->type() == onnx::AttributeProto::TENSOR
                                       ? ctx.tensors.importTensor(value->t(), error)
                                       : FailureOr<ElementsAttr>(failure());
    if (failed(attr))
      return ctx.error() << "attribute 'value' must be a one-element tensor"
                         << (error.empty() ? "" : ": ") << error;
    auto dense = dyn_cast<DenseElementsAttr>(*attr);
    if (!dense || dense.getNumElements() != 1)
      return ctx.error() << "attribute 'value' must be a one-element tensor";
    elementType = dense.getElementType();
    if (isa<FloatType>(elementType))
      fill = (*dense.getValues<APFloat>().begin()).convertToDouble();
    else if (elementType.isInteger(1) || elementType.isUnsignedInteger())
      fill = double((*dense.getValues<APInt>().begin()).getZExtValue());
    else
      fill = double((*dense.getValues<APInt>().begin()).getSExtValue());
  }
  return one(ctx.create<ConstantOfShapeOp>(1, elementType, ctx.input(0),
                                           ctx.builder.getF32FloatAttr(float(fill)))
                 .getResult());
}

Results importRange(NodeContext &ctx) {
  if (failed(ctx.expectInputs(3, 3)))
    return failure();
  return one(
      ctx.create<RangeOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), ctx.input(2)).getResult());
}

Results importTrilu(NodeContext &ctx) {
  FailureOr<int64_t> upper = ctx.intAttr("upper", 1);
  if (failed(ctx.expectInputs(1, 2)) || failed(upper))
    return failure();
  return one(
      ctx.create<TriluOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), i64(ctx, *upper)).getResult());
}

Results importCumSum(NodeContext &ctx) {
  FailureOr<int64_t> exclusive = ctx.intAttr("exclusive", 0), reverse = ctx.intAttr("reverse", 0);
  if (failed(ctx.expectInputs(2, 2)) || failed(exclusive) || failed(reverse))
    return failure();
  return one(ctx.create<CumSumOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), i64(ctx, *exclusive),
                                  i64(ctx, *reverse))
                 .getResult());
}

// ---- Mixture-of-experts routing (compile-only: kiln-inject fuses them) ----

Results importTopK(NodeContext &ctx) {
  FailureOr<int64_t> axis = ctx.intAttr("axis", -1), largest = ctx.intAttr("largest", 1),
                     sorted = ctx.intAttr("sorted", 1);
  if (failed(ctx.expectInputs(2, 2)) || failed(axis) || failed(largest) || failed(sorted))
    return failure();
  if (ctx.node.output_size() != 2)
    return ctx.error() << "needs two outputs (values, indices)";
  auto op = ctx.create<TopKOp>(2, ctx.f32(), ctx.input(0), ctx.input(1), i64(ctx, *axis),
                               i64(ctx, *largest), i64(ctx, *sorted));
  return SmallVector<Value>(op->getResults());
}

Results importOneHot(NodeContext &ctx) {
  FailureOr<int64_t> axis = ctx.intAttr("axis", -1);
  if (failed(ctx.expectInputs(3, 3)) || failed(axis))
    return failure();
  return one(ctx.create<OneHotOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), ctx.input(2),
                                  i64(ctx, *axis))
                 .getResult());
}

Results importScatterElements(NodeContext &ctx) {
  FailureOr<int64_t> axis = ctx.intAttr("axis", 0);
  FailureOr<std::string> reduction = ctx.stringAttr("reduction", StringRef("none"));
  if (failed(ctx.expectInputs(3, 3)) || failed(axis) || failed(reduction))
    return failure();
  return one(ctx.create<ScatterElementsOp>(1, ctx.f32(), ctx.input(0), ctx.input(1),
                                           ctx.input(2), i64(ctx, *axis),
                                           ctx.builder.getStringAttr(*reduction))
                 .getResult());
}

Results importClip(NodeContext &ctx) {
  if (failed(ctx.expectInputs(1, 3)))
    return failure();
  return one(
      ctx.create<ClipOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), ctx.input(2)).getResult());
}

Results importTile(NodeContext &ctx) {
  if (failed(ctx.expectInputs(2, 2)))
    return failure();
  return one(ctx.create<TileOp>(1, ctx.f32(), ctx.input(0), ctx.input(1)).getResult());
}

Results importFlatten(NodeContext &ctx) {
  FailureOr<int64_t> axis = ctx.intAttr("axis", 1);
  if (failed(ctx.expectInputs(1, 1)) || failed(axis))
    return failure();
  return one(ctx.create<FlattenOp>(1, ctx.f32(), ctx.input(0), i64(ctx, *axis)).getResult());
}

/// Constant: exactly one of value, value_float(s), value_int(s).
Results importConstant(NodeContext &ctx) {
  if (failed(ctx.expectInputs(0, 0)))
    return failure();
  if (ctx.node.attribute_size() != 1)
    return ctx.error() << "needs exactly one value attribute, got " << ctx.node.attribute_size();
  const onnx::AttributeProto &a = ctx.node.attribute(0);
  OpBuilder &b = ctx.builder;
  std::string outputName = ctx.node.output_size() ? ctx.node.output(0) : "";
  ElementsAttr value;
  if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR) {
    std::string error;
    FailureOr<ElementsAttr> t = ctx.tensors.importTensor(a.t(), error);
    if (failed(t))
      return ctx.error() << "attribute 'value': " << error;
    value = *t;
  } else if (a.name() == "value_float" && a.type() == onnx::AttributeProto::FLOAT) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()), a.f());
  } else if (a.name() == "value_floats" && a.type() == onnx::AttributeProto::FLOATS) {
    SmallVector<float> v(a.floats().begin(), a.floats().end());
    value = DenseElementsAttr::get(RankedTensorType::get({int64_t(v.size())}, b.getF32Type()),
                                   ArrayRef(v));
  } else if (a.name() == "value_int" && a.type() == onnx::AttributeProto::INT) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()), int64_t(a.i()));
  } else if (a.name() == "value_ints" && a.type() == onnx::AttributeProto::INTS) {
    SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
    value = DenseElementsAttr::get(RankedTensorType::get({int64_t(v.size())}, b.getI64Type()),
                                   ArrayRef(v));
  } else {
    return ctx.error() << "attribute '" << a.name()
                       << "' is not supported (value, value_float(s) and value_int(s) are)";
  }
  return one(ctx.constant(value, outputName));
}

/// Every dialect op that declares kOnnxName (the Kiln_UnaryOp class of
/// KilnOps.td) imports as unary<Op> under that name.
template <typename OpT, typename = void> struct HasOnnxName : std::false_type {};
template <typename OpT>
struct HasOnnxName<OpT, std::void_t<decltype(OpT::kOnnxName)>> : std::true_type {};

template <typename OpT> void addUnaryImport(llvm::StringMap<NodeHandler> &table) {
  if constexpr (HasOnnxName<OpT>::value)
    table.try_emplace(OpT::kOnnxName, unary<OpT>);
}

template <typename... Ops> void addUnaryImports(llvm::StringMap<NodeHandler> &table) {
  (addUnaryImport<Ops>(table), ...);
}

llvm::StringMap<NodeHandler> buildHandlers() {
  llvm::StringMap<NodeHandler> table = {
      {"MatMul", binary<MatMulOp>},
      {"Gemm", importGemm},
      {"Add", binary<AddOp>},
      {"Sub", binary<SubOp>},
      {"Mul", binary<MulOp>},
      {"Div", binary<DivOp>},
      {"Pow", binary<PowOp>},
      {"Equal", binary<EqualOp>},
      {"Less", binary<LessOp>},
      {"Greater", binary<GreaterOp>},
      {"LessOrEqual", binary<LessOrEqualOp>},
      {"GreaterOrEqual", binary<GreaterOrEqualOp>},
      {"And", binary<AndOp>},
      {"Or", binary<OrOp>},
      {"Xor", binary<XorOp>},
      {"Max", variadic<MaxOp>},
      {"Min", variadic<MinOp>},
      {"Where",
       [](NodeContext &ctx) -> Results {
         if (failed(ctx.expectInputs(3, 3)))
           return failure();
         return one(ctx.create<WhereOp>(1, ctx.f32(), ctx.input(0), ctx.input(1), ctx.input(2))
                        .getResult());
       }},
      {"IsNaN", unary<IsNaNOp>},
      {"Softmax", softmaxLike<SoftmaxOp>},
      {"LogSoftmax", softmaxLike<LogSoftmaxOp>},
      {"ReduceMean", reduce<ReduceMeanOp, 18>},
      {"ReduceSum", reduce<ReduceSumOp, 13>},
      {"ReduceMax", reduce<ReduceMaxOp, 18>},
      {"ReduceMin", reduce<ReduceMinOp, 18>},
      {"LayerNormalization", importLayerNorm},
      {"Cast", importCast},
      {"Reshape", importReshape},
      {"Transpose", importTranspose},
      {"Concat", importConcat},
      {"Split", importSplit},
      {"Slice", importSlice},
      {"Gather", importGather},
      {"GatherND", importGatherND},
      {"ScatterND", importScatterND},
      {"Unsqueeze", importUnsqueeze},
      {"Squeeze", importSqueeze},
      {"Expand", binary<ExpandOp>},
      {"Shape", importShape},
      {"Size", importSize},
      {"ConstantOfShape", importConstantOfShape},
      {"Range", importRange},
      {"Trilu", importTrilu},
      {"CumSum", importCumSum},
      {"TopK", importTopK},
      {"OneHot", importOneHot},
      {"NonZero", unary<NonZeroOp>},
      {"ScatterElements", importScatterElements},
      {"Constant", importConstant},
      {"Clip", importClip},
      {"Tile", importTile},
      {"Flatten", importFlatten},
  };
  addUnaryImports<
#define GET_OP_LIST
#include "compiler/dialect/KilnOps.cpp.inc"
      >(table);
  return table;
}

const llvm::StringMap<NodeHandler> &handlers() {
  static const llvm::StringMap<NodeHandler> table = buildHandlers();
  return table;
}

} // namespace

NodeHandler lookupNodeHandler(StringRef opType) {
  auto it = handlers().find(opType);
  return it == handlers().end() ? nullptr : it->second;
}

} // namespace kiln::onnx_import
