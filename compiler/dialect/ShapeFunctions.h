//===- ShapeFunctions.h - helpers of the kiln shape functions ---*- C++ -*-===//
//
// Internal to the dialect: what KilnShapes.cpp and KilnShapeOps.cpp share.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_DIALECT_SHAPEFUNCTIONS_H
#define KILN_COMPILER_DIALECT_SHAPEFUNCTIONS_H

#include "compiler/dialect/ShapeInference.h"

namespace kiln::shape_fn {

mlir::Type elementTypeOf(mlir::Value v);

/// The numpy broadcast of several shapes (unranked if any is).
SymShape broadcastShapes(llvm::ArrayRef<SymShape> shapes);

/// Records `values` for `result` when they are integers of a tracked size.
/// Call after setResult(): the importer's ops still have placeholder types.
void setIntValues(ShapeInferenceContext &ctx, mlir::Value result, std::optional<SymDims> values);

/// A 1-D operand's values as dims, or `length` unknown dims when only its
/// length is static; nullopt when even that is unknown.
std::optional<SymDims> shapeOperandDims(ShapeInferenceContext &ctx, mlir::Value shape);

} // namespace kiln::shape_fn

#endif // KILN_COMPILER_DIALECT_SHAPEFUNCTIONS_H
