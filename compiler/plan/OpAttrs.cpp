//===- OpAttrs.cpp - MLIR op attributes as plan attributes ---------------===//

#include "compiler/plan/OpAttrs.h"

#include "compiler/dialect/KilnDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>

namespace kiln::plan {
namespace {

llvm::Error err(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

AttrDesc ints(std::vector<int64_t> values) {
  AttrDesc d;
  d.kind = AttrKind::Ints;
  d.ints = std::move(values);
  return d;
}

AttrDesc floats(std::vector<float> values) {
  AttrDesc d;
  d.kind = AttrKind::Floats;
  d.floats = std::move(values);
  return d;
}

/// Converts one attribute value; std::nullopt when its kind has no plan
/// equivalent.
std::optional<AttrDesc> convert(mlir::Attribute attr) {
  AttrDesc d;
  if (auto b = mlir::dyn_cast<mlir::BoolAttr>(attr)) {
    d.i = b.getValue() ? 1 : 0;
    return d;
  }
  if (auto i = mlir::dyn_cast<mlir::IntegerAttr>(attr)) {
    d.i = i.getType().isUnsignedInteger() ? static_cast<int64_t>(i.getValue().getZExtValue())
                                          : i.getValue().getSExtValue();
    return d;
  }
  if (auto f = mlir::dyn_cast<mlir::FloatAttr>(attr)) {
    d.kind = AttrKind::Float;
    d.f = static_cast<float>(f.getValueAsDouble());
    return d;
  }
  if (auto s = mlir::dyn_cast<mlir::StringAttr>(attr)) {
    d.kind = AttrKind::String;
    d.s = s.str();
    return d;
  }
  // A type (e.g. a target element type) travels as its plan DType number.
  if (auto t = mlir::dyn_cast<mlir::TypeAttr>(attr)) {
    std::optional<int64_t> dtype = getDTypeForElementType(t.getValue());
    if (!dtype)
      return std::nullopt;
    d.i = *dtype;
    return d;
  }
  if (auto a = mlir::dyn_cast<mlir::DenseI64ArrayAttr>(attr))
    return ints(std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end()));
  if (auto a = mlir::dyn_cast<mlir::DenseI32ArrayAttr>(attr))
    return ints(std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end()));
  if (auto a = mlir::dyn_cast<mlir::DenseI8ArrayAttr>(attr))
    return ints(std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end()));
  if (auto a = mlir::dyn_cast<mlir::DenseBoolArrayAttr>(attr))
    return ints(std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end()));
  if (auto a = mlir::dyn_cast<mlir::DenseF32ArrayAttr>(attr))
    return floats(std::vector<float>(a.asArrayRef().begin(), a.asArrayRef().end()));
  if (auto a = mlir::dyn_cast<mlir::DenseF64ArrayAttr>(attr))
    return floats(std::vector<float>(a.asArrayRef().begin(), a.asArrayRef().end()));
  if (auto a = mlir::dyn_cast<mlir::ArrayAttr>(attr)) {
    // An empty array has no element kind; Ints is what the runtime's
    // Ints() accessor expects for lists such as perm or axes.
    if (llvm::all_of(a, [](mlir::Attribute e) { return mlir::isa<mlir::IntegerAttr>(e); })) {
      std::vector<int64_t> v;
      for (mlir::Attribute e : a)
        v.push_back(mlir::cast<mlir::IntegerAttr>(e).getInt());
      return ints(std::move(v));
    }
    if (llvm::all_of(a, [](mlir::Attribute e) { return mlir::isa<mlir::FloatAttr>(e); })) {
      std::vector<float> v;
      for (mlir::Attribute e : a)
        v.push_back(static_cast<float>(mlir::cast<mlir::FloatAttr>(e).getValueAsDouble()));
      return floats(std::move(v));
    }
    return std::nullopt;
  }
  if (auto dense = mlir::dyn_cast<mlir::DenseElementsAttr>(attr)) {
    if (dense.getNumElements() > kMaxDenseAttrElements)
      return std::nullopt;
    mlir::Type elem = dense.getElementType();
    if (elem.isInteger(1)) {
      std::vector<int64_t> v;
      for (bool b : dense.getValues<bool>())
        v.push_back(b ? 1 : 0);
      return ints(std::move(v));
    }
    if (mlir::isa<mlir::IntegerType>(elem)) {
      std::vector<int64_t> v;
      for (const llvm::APInt &x : dense.getValues<llvm::APInt>())
        v.push_back(elem.isUnsignedInteger() ? static_cast<int64_t>(x.getZExtValue())
                                             : x.getSExtValue());
      return ints(std::move(v));
    }
    if (mlir::isa<mlir::FloatType>(elem)) {
      std::vector<float> v;
      for (const llvm::APFloat &x : dense.getValues<llvm::APFloat>())
        v.push_back(static_cast<float>(
            llvm::APFloat(x).convertToDouble())); // exact for f16/bf16/f32, rounds f64
      return floats(std::move(v));
    }
  }
  return std::nullopt;
}

} // namespace

llvm::Expected<std::vector<AttrDesc>> convertOpAttrs(mlir::Operation *op) {
  std::vector<AttrDesc> out;
  for (mlir::NamedAttribute named : op->getAttrs()) {
    llvm::StringRef name = named.getName().strref();
    if (name.starts_with("kiln.") || name == "operandSegmentSizes" || name == "resultSegmentSizes")
      continue;
    std::optional<AttrDesc> d = convert(named.getValue());
    if (!d) {
      std::string printed;
      llvm::raw_string_ostream os(printed);
      if (auto elements = mlir::dyn_cast<mlir::ElementsAttr>(named.getValue()))
        os << "elements of type " << elements.getType(); // never print a huge value
      else
        named.getValue().print(os);
      return err("attribute '" + name + "' (" + printed + ") has no plan representation");
    }
    d->name = name.str();
    out.push_back(std::move(*d));
  }
  // Plan.Op.attrs is a FlatBuffers keyed vector: it must be sorted.
  std::sort(out.begin(), out.end(),
            [](const AttrDesc &a, const AttrDesc &b) { return a.name < b.name; });
  return out;
}

} // namespace kiln::plan
