//===- KilnDialect.h - the kiln dialect --------------------------*- C++ -*-===//
//
// The kiln dialect class and the mapping between MLIR element types and the
// plan's DType numbers (schemas/plan.fbs), which kiln.cast's `to` uses.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_DIALECT_KILNDIALECT_H
#define KILN_COMPILER_DIALECT_KILNDIALECT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"

#include <cstdint>
#include <optional>

#include "compiler/dialect/KilnDialect.h.inc"

namespace kiln {

/// The plan DType number of an MLIR element type (f32 -> 1, ..., i1 -> 9), or
/// nullopt for a type kiln does not support.
std::optional<int64_t> getDTypeForElementType(mlir::Type type);

/// The MLIR element type of a plan DType number, or a null type when the
/// number names no supported type.
mlir::Type getElementTypeForDType(mlir::MLIRContext *context, int64_t dtype);

} // namespace kiln

#endif // KILN_COMPILER_DIALECT_KILNDIALECT_H
