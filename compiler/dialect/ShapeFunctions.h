//===- ShapeFunctions.h - helpers of the kiln shape functions ---*- C++ -*-===//
//
// Internal to the dialect: what KilnShapes.cpp and KilnShapeOps.cpp share.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_DIALECT_SHAPEFUNCTIONS_H
#define KILN_COMPILER_DIALECT_SHAPEFUNCTIONS_H

#include "compiler/dialect/ShapeInference.h"

#include <algorithm>
#include <utility>

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

/// ONNX Shape's [start, end) over a tensor of `rank`: negative indices count
/// from the end, both clamp to [0, rank], and end is at least start. Shared
/// by the Shape op's folder and its shape function.
inline std::pair<int64_t, int64_t> shapeSliceBounds(int64_t start, int64_t end, int64_t rank) {
  auto clamp = [rank](int64_t i) {
    if (i < 0)
      i = i < -rank ? 0 : i + rank;
    return std::min(i, rank);
  };
  int64_t s = clamp(start);
  return {s, std::max(clamp(end), s)};
}

} // namespace kiln::shape_fn

#endif // KILN_COMPILER_DIALECT_SHAPEFUNCTIONS_H
