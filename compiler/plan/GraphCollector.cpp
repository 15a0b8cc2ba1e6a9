//===- GraphCollector.cpp - a kiln function as plan tensors and ops ------===//

#include "compiler/plan/GraphCollector.h"

#include "compiler/dialect/KilnDialect.h"
#include "compiler/dialect/ShapeInference.h"
#include "compiler/plan/OpAttrs.h"
#include "compiler/plan/PlanAttrs.h"
#include "compiler/plan/WeightBytes.h"
#include "compiler/support/BuildError.h"
#include "plan_format.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

namespace kiln::plan {
namespace {

using compiler::inputError;
using compiler::internalError;

std::string mlirTypeString(mlir::Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

/// Full operand counts of ops whose only optional operand is the last one
/// (no operandSegmentSizes), so an omitted one still gets its -1 slot in the
/// plan and the runtime can index operands by position (docs/ops.md).
int fullArity(llvm::StringRef type) {
  return llvm::StringSwitch<int>(type)
      .Cases("gemm", "layer_normalization", 3)
      .Cases("reduce_mean", "reduce_sum", "reduce_max", "reduce_min", 2)
      .Cases("split", "squeeze", "trilu", 2)
      .Default(-1);
}

class Collector {
public:
  explicit Collector(mlir::func::FuncOp func) : func(func) {}
  llvm::Expected<CollectedGraph> run();

private:
  llvm::Error addInputs();
  llvm::Error addWeight(mlir::Operation *op);
  llvm::Error addOp(mlir::Operation *op);
  llvm::Error addOutputs(mlir::Operation *terminator);
  llvm::Error readMemoryPlan();
  llvm::Error layOutWeights();
  /// Appends a tensor for `v` (dtype and shape from its type and the
  /// inferred symbols) and returns its id.
  llvm::Expected<int32_t> addTensor(mlir::Value v, std::string name, TensorKind kind,
                                    mlir::Operation *where);

  mlir::func::FuncOp func;
  ShapeInferenceContext shapes;
  GraphDesc graph;
  llvm::DenseMap<mlir::Value, int32_t> ids;
  CollectedGraph result; // its weights, as they are collected
};

llvm::Expected<int32_t> Collector::addTensor(mlir::Value v, std::string name, TensorKind kind,
                                             mlir::Operation *where) {
  auto describe = [&] { return where ? describeOp(where) + ": " : std::string("graph input: "); };
  auto type = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
  if (!type)
    return inputError(describe() + "tensor '" + name + "' has unknown rank (type " +
                      mlirTypeString(v.getType()) + "); the plan needs every tensor's rank");
  std::optional<int64_t> dtype = getDTypeForElementType(type.getElementType());
  if (!dtype)
    return inputError(describe() + "tensor '" + name + "' has element type " +
                      mlirTypeString(type.getElementType()) + ", which the plan cannot hold");
  TensorDesc t;
  t.name = std::move(name);
  t.dtype = static_cast<int>(*dtype);
  t.kind = kind;
  SymShape sym = shapes.getShape(v);
  for (auto [i, d] : llvm::enumerate(type.getShape())) {
    DimDesc dim;
    if (!mlir::ShapedType::isDynamic(d)) {
      dim.value = d;
    } else if (sym.ranked && i < sym.dims.size() && sym.dims[i].isSymbolic()) {
      dim.symbol = sym.dims[i].str();
    }
    t.shape.push_back(std::move(dim));
  }
  int32_t id = static_cast<int32_t>(graph.tensors.size());
  graph.tensors.push_back(std::move(t));
  ids[v] = id;
  return id;
}

llvm::Error Collector::addInputs() {
  for (mlir::BlockArgument arg : func.getArguments()) {
    auto nameAttr = func.getArgAttrOfType<mlir::StringAttr>(arg.getArgNumber(), "kiln.name");
    std::string name = nameAttr ? nameAttr.str() : "input" + std::to_string(arg.getArgNumber());
    auto id = addTensor(arg, name, TensorKind::Input, nullptr);
    if (!id)
      return id.takeError();
    graph.inputs.push_back(*id);
  }
  return llvm::Error::success();
}

llvm::Error Collector::addWeight(mlir::Operation *op) {
  auto value = op->getAttrOfType<mlir::ElementsAttr>("value");
  if (!value)
    return inputError(describeOp(op) + ": a constant without an elements value");
  std::string name;
  if (auto n = op->getAttrOfType<mlir::StringAttr>("name"))
    name = n.str();
  if (name.empty())
    name = nodeName(op->getLoc());
  if (name.empty())
    name = "constant" + std::to_string(result.weights.size());
  auto id = addTensor(op->getResult(0), name, TensorKind::Weight, op);
  if (!id)
    return id.takeError();
  WeightSource source{*id, value, nullptr};
  // kiln-partition's slice of an unsplit weight (passes/PartitionShard.h).
  if (auto spec = op->getAttrOfType<mlir::DictionaryAttr>("kiln.shard")) {
    auto fullName = spec.getAs<mlir::StringAttr>("full_name");
    auto axis = spec.getAs<mlir::IntegerAttr>("axis");
    auto offset = spec.getAs<mlir::IntegerAttr>("offset");
    auto fullDim = spec.getAs<mlir::IntegerAttr>("full_dim");
    auto groups = spec.getAs<mlir::IntegerAttr>("groups");
    auto full = spec.getAs<mlir::ElementsAttr>("source");
    if (!fullName || !axis || !offset || !fullDim || !groups || !full)
      return internalError(describeOp(op) + ": malformed kiln.shard attribute");
    ShardDesc &shard = graph.tensors[*id].shard;
    shard.fullName = fullName.str();
    shard.axis = static_cast<int32_t>(axis.getInt());
    shard.offset = offset.getInt();
    shard.fullDim = fullDim.getInt();
    shard.groups = static_cast<int32_t>(groups.getInt());
    source.shardSource = full;
  }
  result.weights.push_back(source);
  return llvm::Error::success();
}

llvm::Error Collector::addOp(mlir::Operation *op) {
  llvm::StringRef full = op->getName().getStringRef();
  if (!full.starts_with("kiln."))
    return inputError(describeOp(op) + ": only kiln ops can go into a plan");
  OpDesc desc;
  desc.type = full.drop_front(5).str();
  desc.name = nodeName(op->getLoc());

  auto operandId = [&](mlir::Value v) -> llvm::Expected<int32_t> {
    auto it = ids.find(v);
    if (it == ids.end())
      return internalError(describeOp(op) + ": an operand is defined after its use");
    return it->second;
  };
  if (auto segments = op->getAttrOfType<mlir::DenseI32ArrayAttr>("operandSegmentSizes")) {
    unsigned next = 0;
    for (int32_t size : segments.asArrayRef()) {
      if (size == 0)
        desc.inputs.push_back(-1);
      for (int32_t k = 0; k < size; ++k) {
        auto id = operandId(op->getOperand(next++));
        if (!id)
          return id.takeError();
        desc.inputs.push_back(*id);
      }
    }
  } else {
    for (mlir::Value v : op->getOperands()) {
      auto id = operandId(v);
      if (!id)
        return id.takeError();
      desc.inputs.push_back(*id);
    }
    int arity = fullArity(desc.type);
    while (arity > 0 && static_cast<int>(desc.inputs.size()) < arity)
      desc.inputs.push_back(-1);
  }

  auto attrs = convertOpAttrs(op);
  if (!attrs)
    return inputError(describeOp(op) + ": " + llvm::toString(attrs.takeError()));
  desc.attrs = std::move(*attrs);

  bool host = isHostOp(op);
  auto slots = op->getAttrOfType<mlir::DenseI64ArrayAttr>(kSlotsAttr);
  if (!host && (!slots || slots.size() != static_cast<int64_t>(op->getNumResults())))
    return internalError(describeOp(op) + ": no memory plan slots (kiln-memory-plan did not run)");
  for (auto [i, r] : llvm::enumerate(op->getResults())) {
    std::string name = desc.name.empty() ? desc.type : desc.name;
    if (op->getNumResults() > 1)
      name += ":" + std::to_string(i);
    auto id = addTensor(r, name, TensorKind::Activation, op);
    if (!id)
      return id.takeError();
    TensorDesc &t = graph.tensors[*id];
    t.host = host;
    t.slot = host ? -1 : static_cast<int>(slots[i]);
    if (!host && t.slot < 0)
      return internalError(describeOp(op) + ": result " + llvm::Twine(i) + " has no slot");
    desc.outputs.push_back(*id);
  }
  graph.ops.push_back(std::move(desc));
  return llvm::Error::success();
}

llvm::Error Collector::addOutputs(mlir::Operation *terminator) {
  for (auto [i, v] : llvm::enumerate(terminator->getOperands())) {
    auto it = ids.find(v);
    if (it == ids.end())
      return internalError("a graph output is not a known tensor");
    // Activations take the graph output's name: the caller and the decoder
    // roles (logits, present.N.key) know them by it.
    auto name = func.getResultAttrOfType<mlir::StringAttr>(i, "kiln.name");
    TensorDesc &t = graph.tensors[it->second];
    if (name && t.kind == TensorKind::Activation &&
        std::find(graph.outputs.begin(), graph.outputs.end(), it->second) == graph.outputs.end())
      t.name = name.str();
    // The ONNX file's declared dim names fill what inference could not
    // name (e.g. a batch dim lost in a Reshape to [-1, ...]).
    if (auto dims = func.getResultAttrOfType<mlir::ArrayAttr>(i, "kiln.dims"))
      if (dims.size() == t.shape.size())
        for (auto [d, attr] : llvm::zip(t.shape, dims))
          if (auto s = mlir::dyn_cast<mlir::StringAttr>(attr); s && d.value < 0 && d.symbol.empty())
            d.symbol = s.str();
    graph.outputs.push_back(it->second);
  }
  return llvm::Error::success();
}

llvm::Error Collector::readMemoryPlan() {
  auto mp = func->getAttrOfType<mlir::DictionaryAttr>(kMemoryPlanAttr);
  if (!mp) {
    if (graph.ops.empty())
      return llvm::Error::success();
    return internalError("the function has no memory plan (kiln-memory-plan did not run)");
  }
  auto numSlots = mp.getAs<mlir::IntegerAttr>("num_slots");
  auto bytes = mp.getAs<mlir::DenseI64ArrayAttr>("slot_static_bytes");
  auto unshared = mp.getAs<mlir::IntegerAttr>("unshared_static_bytes");
  if (!numSlots || !bytes || !unshared || bytes.size() != numSlots.getInt())
    return internalError("malformed kiln.memory_plan attribute");
  graph.memory.numSlots = static_cast<int32_t>(numSlots.getInt());
  graph.memory.slotStaticBytes.assign(bytes.asArrayRef().begin(), bytes.asArrayRef().end());
  graph.memory.unsharedStaticBytes = unshared.getInt();
  for (const TensorDesc &t : graph.tensors)
    if (t.kind == TensorKind::Activation && !t.host && t.slot >= graph.memory.numSlots)
      return internalError("tensor '" + t.name + "' has slot " + llvm::Twine(t.slot) +
                           " beyond the memory plan's " + llvm::Twine(graph.memory.numSlots));
  return llvm::Error::success();
}

/// Section 0 holds every weight at a multiple of kTensorAlign. Only the
/// offsets are fixed here; the writer streams the bytes (no copy of the
/// section is ever held in memory).
llvm::Error Collector::layOutWeights() {
  uint64_t end = 0;
  for (const WeightSource &w : result.weights) {
    auto size = weightByteSize(w.value);
    if (!size)
      return inputError("weight '" + graph.tensors[w.tensor].name +
                        "': " + llvm::toString(size.takeError()));
    TensorDesc &t = graph.tensors[w.tensor];
    t.section = 0;
    t.offset = AlignUp(end, kTensorAlign);
    t.size = *size;
    end = t.offset + t.size;
  }
  graph.weightBytes = end;
  return llvm::Error::success();
}

llvm::Expected<CollectedGraph> Collector::run() {
  if (func.isExternal())
    return inputError("the graph function has no body");
  // Symbols for dynamic dims. The cleanup phase already ran shape inference
  // to a fixpoint, so this must not change any type; if it did, the memory
  // plan was computed on stale types.
  bool changed = false;
  if (mlir::failed(inferFunctionShapes(func, shapes, &changed)))
    return inputError("shape inference failed while writing the plan");
  if (changed)
    return internalError("shape inference changed types after memory planning");

  if (llvm::Error e = addInputs())
    return std::move(e);
  mlir::Block &body = func.getBody().front();
  for (mlir::Operation &op : body) {
    llvm::Error e = llvm::Error::success();
    if (op.hasTrait<mlir::OpTrait::IsTerminator>())
      e = addOutputs(&op);
    else if (isWeightOp(&op))
      e = addWeight(&op);
    else
      e = addOp(&op);
    if (e)
      return std::move(e);
  }
  if (llvm::Error e = readMemoryPlan())
    return std::move(e);
  if (llvm::Error e = layOutWeights())
    return std::move(e);
  result.graph = std::move(graph);
  return std::move(result);
}

} // namespace

llvm::Expected<CollectedGraph> collectGraph(mlir::func::FuncOp func) {
  return Collector(func).run();
}

} // namespace kiln::plan
