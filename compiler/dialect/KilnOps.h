//===- KilnOps.h - kiln ops --------------------------------------*- C++ -*-===//
//
// The kiln ops (generated from KilnOps.td), the shape inference interface,
// and the shared verifier and shape functions the op families forward to.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_DIALECT_KILNOPS_H
#define KILN_COMPILER_DIALECT_KILNOPS_H

#include "compiler/dialect/KilnDialect.h"
#include "compiler/dialect/ShapeInference.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "compiler/dialect/KilnInterfaces.h.inc"

namespace kiln {

/// Folders only materialize constants up to this many elements (splats
/// included), so shape subgraphs fold while weights are never duplicated and
/// big masks stay ops the runtime computes.
inline constexpr int64_t kMaxFoldElements = 1024;

/// How a broadcasting op's result element type relates to its operands'.
enum class ElemRule {
  SameAsOperands, // a, b and the result share one element type
  FirstOperand,   // the result has a's type; b's may differ (Pow)
  Bool,           // a and b share one type, the result is i1 (comparisons)
};

/// The values of an integer tensor defined by a kiln.constant holding a
/// DenseElementsAttr, or nullopt (KilnVerify.cpp).
std::optional<llvm::SmallVector<int64_t>> getConstantIntValues(mlir::Value value);

/// Normalizes an axis in [-rank, rank) (or [-rank, rank] with
/// `inclusiveEnd`) to [0, rank], or nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank, bool inclusiveEnd = false);

// Shared verifiers (KilnVerify.cpp).
mlir::LogicalResult verifyBroadcastOp(mlir::Operation *op, ElemRule rule);
mlir::LogicalResult verifyUnaryOp(mlir::Operation *op);
mlir::LogicalResult verifySoftmaxLikeOp(mlir::Operation *op, int64_t axis);
mlir::LogicalResult verifyReduceOp(mlir::Operation *op, int64_t keepdims,
                                   int64_t noopWithEmptyAxes);

// Shared folder of the unary elementwise ops (KilnFolds.cpp).
mlir::OpFoldResult foldUnaryOp(mlir::Operation *op, mlir::Attribute operand);

// Shared shape functions (KilnShapes.cpp).
mlir::LogicalResult inferBroadcastOp(mlir::Operation *op, ShapeInferenceContext &ctx,
                                     ElemRule rule);
mlir::LogicalResult inferUnaryOp(mlir::Operation *op, ShapeInferenceContext &ctx);
mlir::LogicalResult inferReduceOp(mlir::Operation *op, ShapeInferenceContext &ctx, int64_t keepdims,
                                  int64_t noopWithEmptyAxes);

} // namespace kiln

#define GET_OP_CLASSES
#include "compiler/dialect/KilnOps.h.inc"

#endif // KILN_COMPILER_DIALECT_KILNOPS_H
