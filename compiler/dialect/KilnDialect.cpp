//===- KilnDialect.cpp - the kiln dialect ---------------------------------===//

#include "compiler/dialect/KilnDialect.h"
#include "compiler/dialect/KilnCollectiveOps.h"

#include "compiler/dialect/KilnOps.h"
#include "kiln_schema/plan_generated.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

#include "compiler/dialect/KilnDialect.cpp.inc"

namespace kiln {

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "compiler/dialect/KilnOps.cpp.inc"
      >();
  registerCollectiveOps(*this);
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                            Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements, /*name=*/StringAttr());
}

std::optional<int64_t> getDTypeForElementType(Type type) {
  using fb::DType;
  auto number = [](DType d) { return std::optional<int64_t>(static_cast<int64_t>(d)); };
  if (type.isF32())
    return number(DType::F32);
  if (type.isF16())
    return number(DType::F16);
  if (type.isBF16())
    return number(DType::BF16);
  if (type.isF64())
    return number(DType::F64);
  if (type.isSignlessInteger(8))
    return number(DType::I8);
  if (type.isUnsignedInteger(8))
    return number(DType::U8);
  if (type.isSignlessInteger(32))
    return number(DType::I32);
  if (type.isSignlessInteger(64))
    return number(DType::I64);
  if (type.isSignlessInteger(1))
    return number(DType::Bool);
  return std::nullopt;
}

Type getElementTypeForDType(MLIRContext *context, int64_t dtype) {
  Builder b(context);
  switch (static_cast<fb::DType>(dtype)) {
  case fb::DType::F32:
    return b.getF32Type();
  case fb::DType::F16:
    return b.getF16Type();
  case fb::DType::BF16:
    return b.getBF16Type();
  case fb::DType::F64:
    return b.getF64Type();
  case fb::DType::I8:
    return b.getIntegerType(8);
  case fb::DType::U8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case fb::DType::I32:
    return b.getI32Type();
  case fb::DType::I64:
    return b.getI64Type();
  case fb::DType::Bool:
    return b.getI1Type();
  default:
    return Type();
  }
}

} // namespace kiln
