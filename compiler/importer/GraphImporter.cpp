//===- GraphImporter.cpp - ONNX graph -> func.func ------------------------===//

#include "compiler/importer/GraphImporter.h"

#include "compiler/importer/ModelLoader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

using namespace mlir;

namespace kiln::onnx_import {

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

InFlightDiagnostic NodeContext::error() {
  return emitError(loc) << "node '" << name << "' (" << node.op_type() << ", opset " << opset
                        << "): ";
}

LogicalResult NodeContext::expectInputs(unsigned min, unsigned max) {
  unsigned n = node.input_size();
  if (n < min || n > max) {
    InFlightDiagnostic diag = error() << "expected ";
    if (min == max)
      diag << min;
    else
      diag << min << " to " << max;
    return diag << " inputs, got " << n;
  }
  for (unsigned i = 0; i < min; ++i)
    if (!inputs[i])
      return error() << "input " << i << " is required";
  return success();
}

const onnx::AttributeProto *NodeContext::findAttr(StringRef attrName) const {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == attrName)
      return &a;
  return nullptr;
}

FailureOr<int64_t> NodeContext::intAttr(StringRef attrName, std::optional<int64_t> defaultValue) {
  const onnx::AttributeProto *a = findAttr(attrName);
  if (!a) {
    if (defaultValue)
      return *defaultValue;
    return error() << "attribute '" << attrName << "' is required";
  }
  if (a->type() != onnx::AttributeProto::INT)
    return error() << "attribute '" << attrName << "' must be an int";
  return a->i();
}

FailureOr<float> NodeContext::floatAttr(StringRef attrName, std::optional<float> defaultValue) {
  const onnx::AttributeProto *a = findAttr(attrName);
  if (!a) {
    if (defaultValue)
      return *defaultValue;
    return error() << "attribute '" << attrName << "' is required";
  }
  if (a->type() != onnx::AttributeProto::FLOAT)
    return error() << "attribute '" << attrName << "' must be a float";
  return a->f();
}

FailureOr<std::string> NodeContext::stringAttr(StringRef attrName,
                                               std::optional<StringRef> defaultValue) {
  const onnx::AttributeProto *a = findAttr(attrName);
  if (!a) {
    if (defaultValue)
      return defaultValue->str();
    return error() << "attribute '" << attrName << "' is required";
  }
  if (a->type() != onnx::AttributeProto::STRING)
    return error() << "attribute '" << attrName << "' must be a string";
  return a->s();
}

FailureOr<std::optional<SmallVector<int64_t>>> NodeContext::intsAttr(StringRef attrName) {
  const onnx::AttributeProto *a = findAttr(attrName);
  if (!a)
    return std::optional<SmallVector<int64_t>>();
  if (a->type() != onnx::AttributeProto::INTS)
    return error() << "attribute '" << attrName << "' must be a list of ints";
  return std::optional<SmallVector<int64_t>>(
      SmallVector<int64_t>(a->ints().begin(), a->ints().end()));
}

Value NodeContext::constant(ElementsAttr value, StringRef constantName) {
  auto op = builder.create<ConstantOp>(loc, value.getType(), value,
                                       constantName.empty() ? StringAttr()
                                                            : builder.getStringAttr(constantName));
  created.push_back(op);
  return op;
}

Value NodeContext::constI64(ArrayRef<int64_t> values, bool scalar) {
  SmallVector<int64_t> shape;
  if (!scalar)
    shape.push_back(int64_t(values.size()));
  auto type = RankedTensorType::get(shape, builder.getI64Type());
  return constant(DenseElementsAttr::get(type, values));
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

GraphImporter::GraphImporter(MLIRContext *context, std::shared_ptr<const onnx::ModelProto> model,
                             StringRef path, const OnnxImportOptions &options)
    : context(context), model(std::move(model)), path(path.str()), options(options),
      builder(context) {}

InFlightDiagnostic GraphImporter::graphError() {
  return emitError(FileLineColLoc::get(context, path, 0, 0));
}

Location GraphImporter::nodeLoc(const onnx::NodeProto &node, int index, std::string &name) {
  name = node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
  // The model file as the child location, so tools print "model.onnx:0:0:"
  // in front of the message (which names the node).
  return NameLoc::get(builder.getStringAttr(name), FileLineColLoc::get(context, path, 0, 0));
}

/// The type of a graph input or output, and its dim_params.
static FailureOr<TensorType> valueType(MLIRContext *context, const onnx::ValueInfoProto &value,
                                       SmallVectorImpl<std::string> &dimNames, std::string &error) {
  if (!value.type().has_tensor_type()) {
    error = "'" + value.name() +
            "' is not a tensor (sequences, maps and optionals are not "
            "supported)";
    return failure();
  }
  const onnx::TypeProto::Tensor &tensor = value.type().tensor_type();
  Type elementType = getElementType(context, tensor.elem_type());
  if (!elementType) {
    error =
        "'" + value.name() + "' has unsupported element type " + onnxTypeName(tensor.elem_type());
    return failure();
  }
  if (!tensor.has_shape())
    return TensorType(UnrankedTensorType::get(elementType));
  SmallVector<int64_t> shape;
  for (const onnx::TensorShapeProto::Dimension &dim : tensor.shape().dim()) {
    bool isStatic = dim.has_dim_value() && dim.dim_value() >= 0;
    shape.push_back(isStatic ? dim.dim_value() : ShapedType::kDynamic);
    dimNames.push_back(!isStatic && dim.has_dim_param() ? dim.dim_param() : "");
  }
  return TensorType(RankedTensorType::get(shape, elementType));
}

static ArrayAttr stringArray(Builder &b, ArrayRef<std::string> strings) {
  SmallVector<Attribute> attrs;
  for (const std::string &s : strings)
    attrs.push_back(b.getStringAttr(s));
  return b.getArrayAttr(attrs);
}

FailureOr<OwningOpRef<ModuleOp>> GraphImporter::run() {
  std::string error;
  std::optional<int64_t> supported = getSupportedOpset(*model, error);
  if (!supported)
    return graphError() << error;
  opset = *supported;
  const onnx::GraphProto &graph = model->graph();
  if (graph.sparse_initializer_size() > 0)
    return graphError() << "sparse initializers are not supported";
  tensors = std::make_unique<TensorImporter>(
      context, model, llvm::sys::path::parent_path(path).str(), options.maxInlineElements);

  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr("kiln.opset", builder.getI64IntegerAttr(opset));
  (*module)->setAttr("kiln.ir_version", builder.getI64IntegerAttr(model->ir_version()));
  (*module)->setAttr("kiln.producer_name", builder.getStringAttr(model->producer_name()));
  (*module)->setAttr("kiln.producer_version", builder.getStringAttr(model->producer_version()));
  (*module)->setAttr("kiln.graph_name", builder.getStringAttr(graph.name()));
  if (model->metadata_props_size() > 0) {
    SmallVector<NamedAttribute> props;
    for (const onnx::StringStringEntryProto &p : model->metadata_props())
      props.push_back(builder.getNamedAttr(p.key(), builder.getStringAttr(p.value())));
    (*module)->setAttr("kiln.metadata", builder.getDictionaryAttr(props));
  }

  // Arguments: graph inputs that are not initializers (older exporters list
  // initializers as inputs too).
  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &t : graph.initializer())
    initializerNames.insert(t.name());
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::string> argNames;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    SmallVector<std::string> dims;
    FailureOr<TensorType> type = valueType(context, input, dims, error);
    if (failed(type))
      return graphError() << "graph input " << error;
    argTypes.push_back(*type);
    argNames.push_back(input.name());
    SmallVector<NamedAttribute> attrs = {
        builder.getNamedAttr("kiln.name", builder.getStringAttr(input.name()))};
    if (isa<RankedTensorType>(*type))
      attrs.push_back(builder.getNamedAttr("kiln.dims", stringArray(builder, dims)));
    argAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(fileLoc, "main", builder.getFunctionType(argTypes, {}));
  func.setAllArgAttrs(argAttrs);
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  seedArgumentShapes(func, shapes);
  for (auto [name, arg] : llvm::zip(argNames, body->getArguments())) {
    if (values.count(name))
      return graphError() << "graph input '" << name << "' is declared twice";
    values[name] = arg;
  }

  for (const onnx::TensorProto &t : graph.initializer()) {
    FailureOr<ElementsAttr> value = tensors->importTensor(t, error);
    if (failed(value))
      return graphError() << "initializer '" << t.name() << "': " << error;
    auto op = builder.create<ConstantOp>(NameLoc::get(builder.getStringAttr(t.name()), fileLoc),
                                         value->getType(), *value, builder.getStringAttr(t.name()));
    (void)inferOpShapes(op, shapes, /*replaceTypes=*/true);
    values[t.name()] = op;
  }

  for (auto [index, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, int(index))))
      return failure();

  // Results: the graph outputs, named, with their declared dim_params where
  // there are some and the inferred symbolic dims elsewhere.
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    auto it = values.find(output.name());
    if (it == values.end())
      return graphError() << "graph output '" << output.name() << "' is never produced";
    Value v = it->second;
    results.push_back(v);
    SmallVector<NamedAttribute> attrs = {
        builder.getNamedAttr("kiln.name", builder.getStringAttr(output.name()))};
    SymShape shape = shapes.getShape(v);
    if (shape.ranked) {
      SmallVector<std::string> dims;
      for (const SymDim &d : shape.dims)
        dims.push_back(d.isSymbolic() ? d.str() : "");
      SmallVector<std::string> declared;
      std::string ignored;
      if (succeeded(valueType(context, output, declared, ignored)) &&
          declared.size() == dims.size())
        for (auto [d, name] : llvm::zip(dims, declared))
          if (!name.empty())
            d = name;
      attrs.push_back(builder.getNamedAttr("kiln.dims", stringArray(builder, dims)));
    }
    resultAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  builder.create<func::ReturnOp>(fileLoc, results);
  func.setType(builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  func.setAllResultAttrs(resultAttrs);
  // The files the weights came from, for the plan's provenance.
  SmallVector<Attribute> externalFiles;
  for (const std::string &f : tensors->externalDataFiles())
    externalFiles.push_back(builder.getStringAttr(f));
  if (!externalFiles.empty())
    (*module)->setAttr("kiln.external_data", builder.getArrayAttr(externalFiles));
  if (failed(verify(*module)))
    return failure();
  return module;
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node, int index) {
  std::string name;
  Location loc = nodeLoc(node, index, name);
  NodeContext ctx(node, name, opset, loc, builder, *tensors);
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return ctx.error() << "unsupported op '" << node.op_type() << "' of domain '" << node.domain()
                       << "'";
  NodeHandler handler = lookupNodeHandler(node.op_type());
  if (!handler)
    return ctx.error() << "unsupported op '" << node.op_type()
                       << "' (docs/ops.md lists the ops kiln supports)";
  for (const std::string &input : node.input()) {
    if (input.empty()) {
      ctx.inputs.push_back(Value());
      continue;
    }
    auto it = values.find(input);
    if (it == values.end())
      return ctx.error() << "input '" << input
                         << "' is not defined before the node (is the graph sorted?)";
    ctx.inputs.push_back(it->second);
  }
  FailureOr<SmallVector<Value>> outputs = handler(ctx);
  if (failed(outputs))
    return failure();

  // Infer and verify what the handler built; errors from the ops themselves
  // get the node's name, op type and opset in front.
  std::string opErrors;
  {
    ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error)
        opErrors += (opErrors.empty() ? "" : "; ") + diag.str();
      return success();
    });
    for (Operation *op : ctx.created)
      if (failed(inferOpShapes(op, shapes, /*replaceTypes=*/true)) || failed(verify(op)))
        break;
  }
  if (!opErrors.empty())
    return ctx.error() << opErrors;

  for (auto [i, output] : llvm::enumerate(node.output())) {
    if (output.empty())
      continue;
    if (i >= outputs->size())
      return ctx.error() << "output " << i << " ('" << output << "') is not supported";
    values[output] = (*outputs)[i];
  }
  return success();
}

} // namespace kiln::onnx_import
