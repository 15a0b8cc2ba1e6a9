//===- InjectUtils.h - matching helpers for the injection patterns -*- C++ -*-===//
//
// Shared by the kernel-injection patterns (Inject*.cpp): looking through the
// casts and reshapes exporters insert, reading scalar constants, and making
// new weights (concatenated, transposed, offset) from existing ones at
// compile time.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_INJECTUTILS_H
#define KILN_PASSES_INJECTUTILS_H

#include "compiler/dialect/KilnOps.h"

#include "mlir/IR/PatternMatch.h"

#include <optional>
#include <string>

namespace kiln::inject {

/// `v` with any chain of float-to-float kiln.cast ops removed (exporters
/// wrap norms in precision casts; in an f32 graph they are identities).
mlir::Value skipCasts(mlir::Value v);

/// The value of a one-element float or integer constant (any rank).
std::optional<double> scalarConstant(mlir::Value v);

/// True when `v`'s element type is one the fused kernels compute (f32, f16,
/// bf16); an f64 graph keeps its primitive ops.
bool isKernelFloat(mlir::Value v);

/// True when `v` is a kiln.constant (a weight or a small constant).
bool isConstant(mlir::Value v);

/// True when the 1-element axes operand names the last dim of a rank-`rank`
/// tensor (-1 or rank - 1).
bool isLastAxis(mlir::Value axes, int64_t rank);

/// The static rank of `v`, or -1.
int64_t rankOf(mlir::Value v);

/// The static size of dim `i` (negative from the back), or -1.
int64_t dimOf(mlir::Value v, int64_t i);

/// For a commutative binary op: the operand that is not `known` (null if
/// neither is).
mlir::Value otherOperand(mlir::Operation *op, mlir::Value known);

/// The only user of `v`, or null.
mlir::Operation *soleUser(mlir::Value v);

/// True when `v` is a kiln.constant of static f32 type and rank `rank`: what
/// readF32Weight reads (checked without copying the bytes).
bool isStaticF32(mlir::Value v, int64_t rank);

/// The same for any float type (f32, f16, bf16): what concatColumns and
/// concat1D move as bytes.
bool isStaticFloat(mlir::Value v, int64_t rank);

/// The f32 contents of a float constant (null when `v` is not a constant,
/// not f32, or its bytes cannot be read).
std::optional<std::vector<float>> readF32Weight(mlir::Value v);

/// A new f32 weight constant of `type` holding `data`, named `name`,
/// created before `before`.
mlir::Value makeF32Weight(mlir::PatternRewriter &rewriter, mlir::Location loc,
                          mlir::RankedTensorType type, llvm::ArrayRef<float> data,
                          llvm::StringRef name);

/// The 2-D float weights `parts` ([K, Ni] each, all of one type: f32, f16
/// or bf16) concatenated along columns into [K, sum Ni] of that type;
/// failure (with nothing created) when any is unreadable.
mlir::FailureOr<mlir::Value> concatColumns(mlir::PatternRewriter &rewriter, mlir::Location loc,
                                           llvm::ArrayRef<mlir::Value> parts, llvm::StringRef name);

/// The float weights `parts` (all of one type and one static shape S)
/// stacked into [parts.size(), S...]; failure when any is unreadable.
mlir::FailureOr<mlir::Value> stackWeights(mlir::PatternRewriter &rewriter, mlir::Location loc,
                                          llvm::ArrayRef<mlir::Value> parts, llvm::StringRef name);

/// The 1-D float weights `parts` (all of one type) concatenated.
mlir::FailureOr<mlir::Value> concat1D(mlir::PatternRewriter &rewriter, mlir::Location loc,
                                      llvm::ArrayRef<mlir::Value> parts, llvm::StringRef name);

/// The transpose of a 2-D f32 weight.
mlir::FailureOr<mlir::Value> transposeWeight(mlir::PatternRewriter &rewriter, mlir::Location loc,
                                             mlir::Value w);

/// True when the constant `v` broadcasts per channel over a last dim of `n`
/// for a value of rank `rank`: shape [n], [1, n], [1, 1, n], ... (rank at
/// most `rank`), or a single element. A norm's scale and bias take these.
bool isPerChannelConstant(mlir::Value v, int64_t n, int64_t rank);

/// The per-channel constant `v` (isPerChannelConstant) as a 1-D [n]
/// constant: `v` itself when it already is one, else a reshape or a splat of
/// its one element, created at the rewriter's insertion point.
mlir::Value perChannelWeight(mlir::PatternRewriter &rewriter, mlir::Location loc, mlir::Value v,
                             int64_t n);

/// The constant `v` (dense or dense_resource) reinterpreted as `type`, which
/// has as many elements: the same bytes, a resource keeps sharing its blob.
mlir::Value reshapedConstant(mlir::PatternRewriter &rewriter, mlir::Location loc, mlir::Value v,
                             mlir::RankedTensorType type);

/// A constant of `type` with every element `value` (a unit scale cleanup
/// folded away, a zero bias), named `name`.
mlir::Value splatConstant(mlir::PatternRewriter &rewriter, mlir::Location loc,
                          mlir::RankedTensorType type, double value, llvm::StringRef name);

/// The name of a unit scale made for the norm at `loc`:
/// "<ONNX node>.unit_scale", or "norm.unit_scale" without a node name.
std::string unitScaleName(mlir::Location loc);

/// A constant's name attribute, or "".
std::string constantName(mlir::Value v);

/// A readable name for the op's location (its ONNX node name).
std::string locName(mlir::Location loc);

} // namespace kiln::inject

#endif // KILN_PASSES_INJECTUTILS_H
