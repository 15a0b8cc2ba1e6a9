//===- ShapeInference.h - symbolic shapes of kiln values ---------*- C++ -*-===//
//
// The lattice the kiln shape functions compute over. A dim is a static size,
// a linear expression over named symbols (the ONNX dim_params of the graph
// inputs, e.g. "batch_size" or "past_sequence_length + sequence_length"), or
// unknown. Small integer tensors that compute shapes (Shape -> Gather ->
// Concat -> Reshape) also get their element values tracked with the same
// expressions, so a Reshape built from its input's dims learns them.
//
// The importer and the kiln-shape-inference pass drive it; later passes
// (the plan writer) can run inferFunctionShapes() to recover the symbolic
// dims of every tensor.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_DIALECT_SHAPEINFERENCE_H
#define KILN_COMPILER_DIALECT_SHAPEINFERENCE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <utility>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace kiln {

/// A dim or a shape-tensor element: unknown, a static integer, or
/// constant + sum(coefficient * symbol). Arithmetic that would overflow or
/// leave the linear form gives unknown.
class SymDim {
public:
  /// Unknown.
  SymDim() = default;
  static SymDim unknown() { return SymDim(); }
  static SymDim of(int64_t value);
  static SymDim symbol(llvm::StringRef name);
  /// Parses an ONNX dim_param such as "batch", "seq + 1" or
  /// "past_sequence_length + sequence_length"; anything that is not a sum of
  /// identifiers and integers becomes one opaque symbol named by the text.
  static SymDim parse(llvm::StringRef text);

  bool isKnown() const { return known; }
  bool isStatic() const { return known && terms.empty(); }
  bool isStatic(int64_t value) const { return isStatic() && constant == value; }
  /// A known expression with at least one symbol.
  bool isSymbolic() const { return known && !terms.empty(); }
  int64_t getStatic() const { return constant; }
  /// True when the value is certainly >= 0 (a static value >= 0 or symbols,
  /// which name dims, with non-negative coefficients and constant).
  bool isNonNegative() const;
  /// True when `name` appears in the expression.
  bool hasSymbol(llvm::StringRef name) const {
    return llvm::any_of(terms, [&](const auto &t) { return t.first == name; });
  }
  /// The dim for a tensor type: the static value or ShapedType::kDynamic.
  int64_t toTypeDim() const;
  /// "12", "batch", "past + seq", "seq - 1"; "" when unknown.
  std::string str() const;

  SymDim operator+(const SymDim &other) const;
  SymDim operator-(const SymDim &other) const;
  /// Known when at least one side is static.
  SymDim operator*(const SymDim &other) const;
  /// Known when both are static, or the divisor is static and divides every
  /// coefficient and the constant.
  SymDim floorDiv(const SymDim &other) const;

  /// Two known, identical expressions. Unknown never equals anything.
  bool operator==(const SymDim &other) const {
    return known && other.known && constant == other.constant && terms == other.terms;
  }
  bool operator!=(const SymDim &other) const { return !(*this == other); }

private:
  bool known = false;
  int64_t constant = 0;
  /// (symbol, coefficient) sorted by symbol, no zero coefficients.
  llvm::SmallVector<std::pair<std::string, int64_t>, 1> terms;
};

using SymDims = llvm::SmallVector<SymDim, 4>;

struct SymShape;
/// The element count of a 1-D `axes` operand whose values are unknown but
/// whose length is static; nullopt otherwise. Lets Squeeze, Unsqueeze and
/// reductions with run-time axes still give their result a rank.
std::optional<int64_t> staticAxesCount(const SymShape &axesShape);

/// A tensor shape: unranked, or a list of dims.
struct SymShape {
  bool ranked = false;
  SymDims dims;

  static SymShape unranked() { return SymShape(); }
  static SymShape get(llvm::ArrayRef<SymDim> dims);
  /// The static dims of a tensor type (unknown for `?`).
  static SymShape fromType(mlir::Type type);
  int64_t getRank() const { return static_cast<int64_t>(dims.size()); }
  bool isFullyStatic() const;
  /// Every dim known (static or symbolic).
  bool isFullyKnown() const;
  /// The element count if every dim is static (and it does not overflow).
  std::optional<int64_t> getStaticNumElements() const;
  /// A tensor type with this shape; unranked when the shape is.
  mlir::TensorType toType(mlir::Type elementType) const;
  bool operator==(const SymShape &other) const {
    return ranked == other.ranked && dims == other.dims;
  }
};

/// What the shape functions know. Operand queries fall back to the value's
/// type (and, for values, to a kiln.constant's DenseElementsAttr) when the
/// context has recorded nothing.
class ShapeInferenceContext {
public:
  /// Integer tensors of rank <= 1 with at most this many elements have their
  /// element values tracked.
  static constexpr int64_t kMaxTrackedElements = 64;

  SymShape getShape(mlir::Value value) const;
  /// The element values of a small integer (or i1) tensor of rank <= 1, some
  /// of which may be unknown; nullopt when nothing is known.
  std::optional<SymDims> getValues(mlir::Value value) const;
  /// getValues() when every element is static.
  std::optional<llvm::SmallVector<int64_t>> getStaticValues(mlir::Value value) const;
  /// The value's DenseElementsAttr when a kiln.constant defines it.
  mlir::DenseElementsAttr getConstant(mlir::Value value) const;

  /// Records a result's element type and shape (the shape functions' output).
  void setResult(mlir::Value result, mlir::Type elementType, SymShape shape);
  /// Records a result's element values; ignored for tensors too large to
  /// track.
  void setValues(mlir::Value result, SymDims values);
  /// Records a graph input's shape (from its type and kiln.dims).
  void setShape(mlir::Value value, SymShape shape) { shapes[value] = std::move(shape); }

  /// The element type setResult() recorded, or null.
  mlir::Type getInferredElementType(mlir::Value value) const { return elementTypes.lookup(value); }

private:
  llvm::DenseMap<mlir::Value, SymShape> shapes;
  llvm::DenseMap<mlir::Value, mlir::Type> elementTypes;
  llvm::DenseMap<mlir::Value, SymDims> values;
};

/// Runs `op`'s shape function (if it implements ShapeInferenceOpInterface)
/// and refines its result types with the outcome. With `replaceTypes` (the
/// importer, whose placeholder types carry no information) the inferred
/// types replace the old ones; otherwise they are merged: a static dim of
/// the old type wins over an inferred `?`, and a contradiction is an error at
/// the op. Sets `changed` when a type changed.
mlir::LogicalResult inferOpShapes(mlir::Operation *op, ShapeInferenceContext &ctx,
                                  bool replaceTypes, bool *changed = nullptr);

/// Records the shapes of `func`'s arguments: their types, with the dims that
/// `kiln.dims` names made symbolic.
void seedArgumentShapes(mlir::func::FuncOp func, ShapeInferenceContext &ctx);

/// Seeds the context with `func`'s arguments (their types and `kiln.dims`
/// attributes), infers every op in order, and updates the function type to
/// match what its return op returns. Sets `changed` when any type changed.
mlir::LogicalResult inferFunctionShapes(mlir::func::FuncOp func, ShapeInferenceContext &ctx,
                                        bool *changed = nullptr);

/// The `kiln.dims` array for a shape: one string per dim, "" when static or
/// unknown.
mlir::ArrayAttr getDimsAttr(mlir::MLIRContext *context, const SymShape &shape);

} // namespace kiln

#endif // KILN_COMPILER_DIALECT_SHAPEINFERENCE_H
