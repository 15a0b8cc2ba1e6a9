//===- KilnOps.td - kiln primitive ops ---------------------*- tablegen -*-===//
//
// One op per supported ONNX op (docs/ops.md is the contract: names, operand
// order, attributes with ONNX defaults applied). Every op is Pure, infers its
// shapes through ShapeInferenceOpInterface and prints its operand and result
// types as a functional type, so a refined result type (tensor<2x8xf32>
// from tensor<?x8xf32>) survives a round trip.
//
// Families share TableGen classes: binary broadcasting ops, unary
// elementwise ops, softmax-like ops and reductions. Their verifiers and shape
// functions are shared C++ (KilnVerify.cpp, KilnShapes.cpp) that each op's
// extraClassDefinition forwards to.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "compiler/dialect/KilnDialect.td"
include "compiler/dialect/KilnInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic,
         !listconcat([Pure, DeclareOpInterfaceMethods<Kiln_ShapeInferenceOpInterface>],
                     traits)>;


//===----------------------------------------------------------------------===//
// Binary elementwise ops with multidirectional (numpy) broadcasting.
//===----------------------------------------------------------------------===//

// elemRule names the ::kiln::ElemRule that gives the result element type:
// SameAsOperands (both operands and the result share it), FirstOperand (Pow:
// the exponent may have another type) or Bool (comparisons).
class Kiln_BinaryOp<string mnemonic, string onnxName, string what, Type operandType,
                    Type resultType, string elemRule, string exampleTypes>
    : Kiln_Op<mnemonic> {
  let summary = "ONNX " # onnxName # ": " # what;
  let description = "Computes `" # what # "` elementwise, broadcasting `a` and `b` "
    # "against each other with numpy rules (ONNX multidirectional broadcasting). "
    # "Static dims must be equal or 1.\n\nExample:\n\n```mlir\n%c = kiln." # mnemonic
    # " %a, %b : " # exampleTypes # "\n```";
  let arguments = (ins operandType:$a, operandType:$b);
  let results = (outs resultType:$c);
  let assemblyFormat = "$a `,` $b " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::kiln::verifyBroadcastOp(getOperation(), ::kiln::ElemRule::}] # elemRule # [{);
    }
    ::mlir::LogicalResult $cppClass::inferShapes(::kiln::ShapeInferenceContext &ctx) {
      return ::kiln::inferBroadcastOp(getOperation(), ctx, ::kiln::ElemRule::}] # elemRule # [{);
    }
  }];
}

defvar Kiln_ArithExample = "(tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>";
defvar Kiln_CompareExample = "(tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>";
defvar Kiln_LogicExample = "(tensor<?x8xi1>, tensor<1x8xi1>) -> tensor<?x8xi1>";

class Kiln_ArithOp<string mnemonic, string onnxName, string what>
    : Kiln_BinaryOp<mnemonic, onnxName, what, Kiln_NumericTensor, Kiln_NumericTensor,
                    "SameAsOperands", Kiln_ArithExample>, Kiln_OpTable<"pointwise", "f32">;
class Kiln_CompareOp<string mnemonic, string onnxName, string what>
    : Kiln_BinaryOp<mnemonic, onnxName, what, Kiln_Tensor, Kiln_BoolTensor, "Bool",
                    Kiln_CompareExample>, Kiln_OpTable<"pointwise", "f32">;
class Kiln_LogicOp<string mnemonic, string onnxName, string what>
    : Kiln_BinaryOp<mnemonic, onnxName, what, Kiln_BoolTensor, Kiln_BoolTensor, "Bool",
                    Kiln_LogicExample>, Kiln_OpTable<"pointwise">;

def Kiln_AddOp : Kiln_ArithOp<"add", "Add", "a + b">;
def Kiln_SubOp : Kiln_ArithOp<"sub", "Sub", "a - b">;
def Kiln_MulOp : Kiln_ArithOp<"mul", "Mul", "a * b">;
def Kiln_DivOp : Kiln_ArithOp<"div", "Div", "a / b (integers truncate toward zero)">;
def Kiln_PowOp : Kiln_BinaryOp<"pow", "Pow", "a ^ b (the result has a's element type)",
                               Kiln_NumericTensor, Kiln_NumericTensor, "FirstOperand",
                               "(tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>">,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_MaxOp : Kiln_ArithOp<"max", "Max", "max(a, b)">;
def Kiln_MinOp : Kiln_ArithOp<"min", "Min", "min(a, b)">;

def Kiln_EqualOp : Kiln_CompareOp<"equal", "Equal", "a == b">;
def Kiln_LessOp : Kiln_CompareOp<"less", "Less", "a < b">;
def Kiln_GreaterOp : Kiln_CompareOp<"greater", "Greater", "a > b">;
def Kiln_LessOrEqualOp : Kiln_CompareOp<"less_or_equal", "LessOrEqual", "a <= b">;
def Kiln_GreaterOrEqualOp : Kiln_CompareOp<"greater_or_equal", "GreaterOrEqual", "a >= b">;

def Kiln_AndOp : Kiln_LogicOp<"and", "And", "a and b">;
def Kiln_OrOp : Kiln_LogicOp<"or", "Or", "a or b">;
def Kiln_XorOp : Kiln_LogicOp<"xor", "Xor", "a xor b">;

def Kiln_WhereOp : Kiln_Op<"where">, Kiln_OpTable<"pointwise"> {
  let summary = "ONNX Where: select x where condition holds, else y";
  let description = [{
    Broadcasts `condition`, `x` and `y` together (numpy rules) and picks
    `x` where `condition` is true. Causal masks are built with it.

    Example:

    ```mlir
    %m = kiln.where %cond, %x, %y
        : (tensor<1x1x?x?xi1>, tensor<?x12x?x?xf32>, tensor<f32>) -> tensor<?x12x?x?xf32>
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$x, Kiln_Tensor:$y);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$condition `,` $x `,` $y " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Unary elementwise ops: the result has the operand's type.
//===----------------------------------------------------------------------===//

class Kiln_UnaryOp<string mnemonic, string onnxName, string what, Type type,
                   string exampleType = "tensor<?x8xf32>">
    : Kiln_Op<mnemonic> {
  let summary = "ONNX " # onnxName # ": " # what;
  let description = "Computes `" # what # "` elementwise; the result has the operand's "
    # "element type and shape.\n\nExample:\n\n```mlir\n%y = kiln." # mnemonic # " %x : ("
    # exampleType # ") -> " # exampleType # "\n```";
  let arguments = (ins type:$x);
  let results = (outs type:$y);
  let assemblyFormat = "$x " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  // Folds on small constants (and Identity to its operand).
  let hasFolder = 1;
  // The ONNX op it imports (compiler/importer/NodeImporter.cpp registers every
  // Kiln_UnaryOp under this name).
  let extraClassDeclaration = "static constexpr ::llvm::StringLiteral kOnnxName = \""
    # onnxName # "\";";
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::kiln::verifyUnaryOp(getOperation());
    }
    ::mlir::LogicalResult $cppClass::inferShapes(::kiln::ShapeInferenceContext &ctx) {
      return ::kiln::inferUnaryOp(getOperation(), ctx);
    }
    ::mlir::OpFoldResult $cppClass::fold(FoldAdaptor adaptor) {
      return ::kiln::foldUnaryOp(getOperation(), adaptor.getX());
    }
  }];
}

def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", "Sqrt", "sqrt(x)", Kiln_FloatTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_ReciprocalOp : Kiln_UnaryOp<"reciprocal", "Reciprocal", "1 / x", Kiln_FloatTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_NegOp : Kiln_UnaryOp<"neg", "Neg", "-x", Kiln_SignedTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_ExpOp : Kiln_UnaryOp<"exp", "Exp", "exp(x)", Kiln_FloatTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_LogOp : Kiln_UnaryOp<"log", "Log", "log(x)", Kiln_FloatTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_ErfOp : Kiln_UnaryOp<"erf", "Erf", "erf(x)", Kiln_FloatTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", "Tanh", "tanh(x)", Kiln_FloatTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", "Sigmoid", "1 / (1 + exp(-x))", Kiln_FloatTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_ReluOp : Kiln_UnaryOp<"relu", "Relu", "max(x, 0)", Kiln_SignedTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_AbsOp : Kiln_UnaryOp<"abs", "Abs", "|x|", Kiln_NumericTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_NotOp : Kiln_UnaryOp<"not", "Not", "not x", Kiln_BoolTensor, "tensor<?x8xi1>">,
    Kiln_OpTable<"pointwise">;
def Kiln_IdentityOp : Kiln_UnaryOp<"identity", "Identity", "x", Kiln_Tensor>,
    Kiln_OpTable<"pointwise">;
def Kiln_FloorOp : Kiln_UnaryOp<"floor", "Floor", "floor(x)", Kiln_FloatTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_CosOp : Kiln_UnaryOp<"cos", "Cos", "cos(x)", Kiln_FloatTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_SinOp : Kiln_UnaryOp<"sin", "Sin", "sin(x)", Kiln_FloatTensor>,
    Kiln_OpTable<"pointwise", "f32">;
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", "Ceil", "ceil(x)", Kiln_FloatTensor>,
    Kiln_OpTable<"pointwise", "f32">;

def Kiln_IsNaNOp : Kiln_Op<"is_nan">, Kiln_OpTable<"pointwise"> {
  let summary = "ONNX IsNaN: true where x is NaN";
  let description = [{
    Elementwise NaN test; the result is i1 with x's shape. Exporters of
    scaled-dot-product attention use it to zero fully masked rows.

    Example:

    ```mlir
    %m = kiln.is_nan %x : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xi1>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x);
  let results = (outs Kiln_BoolTensor:$y);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Softmax family and reductions.
//===----------------------------------------------------------------------===//

class Kiln_SoftmaxLikeOp<string mnemonic, string onnxName, string what> : Kiln_Op<mnemonic>,
    Kiln_OpTable<"reduce", "f32"> {
  let summary = "ONNX " # onnxName # ": " # what # " along one axis";
  let description = "Computes " # what # " along `axis` (negative counts from the back; "
    # "ONNX default -1).\n\nExample:\n\n```mlir\n%y = kiln." # mnemonic
    # " %x {axis = -1 : i64} : (tensor<?x12x?x?xf32>) -> tensor<?x12x?x?xf32>\n```";
  let arguments = (ins Kiln_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$input " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::kiln::verifySoftmaxLikeOp(getOperation(), getAxis());
    }
    ::mlir::LogicalResult $cppClass::inferShapes(::kiln::ShapeInferenceContext &ctx) {
      return ::kiln::inferUnaryOp(getOperation(), ctx);
    }
  }];
}

def Kiln_SoftmaxOp : Kiln_SoftmaxLikeOp<"softmax", "Softmax", "softmax">;
def Kiln_LogSoftmaxOp : Kiln_SoftmaxLikeOp<"log_softmax", "LogSoftmax", "log(softmax)">;

class Kiln_ReduceOp<string mnemonic, string onnxName, string what> : Kiln_Op<mnemonic>,
    Kiln_OpTable<"reduce", "f32"> {
  let summary = "ONNX " # onnxName # ": " # what # " over axes";
  let description = "Reduces `data` with " # what # " over the dims listed in the 1-D `axes` "
    # "operand (opset 18 form; the importer turns older `axes` attributes into this operand). "
    # "Without axes (or with empty axes) it reduces every dim, unless "
    # "`noop_with_empty_axes` is 1, which makes it an identity. `keepdims` keeps reduced "
    # "dims as 1.\n\nExample:\n\n```mlir\n%m = kiln." # mnemonic
    # " %x, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64}\n"
    # "    : (tensor<?x?x768xf32>, tensor<1xi64>) -> tensor<?x?x1xf32>\n```";
  let arguments = (ins Kiln_NumericTensor:$data, Optional<Kiln_I64Tensor>:$axes,
                   I64Attr:$keepdims, I64Attr:$noop_with_empty_axes);
  let results = (outs Kiln_NumericTensor:$reduced);
  let assemblyFormat = "$data (`,` $axes^)? " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::kiln::verifyReduceOp(getOperation(), getKeepdims(), getNoopWithEmptyAxes());
    }
    ::mlir::LogicalResult $cppClass::inferShapes(::kiln::ShapeInferenceContext &ctx) {
      return ::kiln::inferReduceOp(getOperation(), ctx, getKeepdims(), getNoopWithEmptyAxes());
    }
  }];
}

def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean", "ReduceMean", "the mean">;
def Kiln_ReduceSumOp : Kiln_ReduceOp<"reduce_sum", "ReduceSum", "the sum">;
def Kiln_ReduceMaxOp : Kiln_ReduceOp<"reduce_max", "ReduceMax", "the maximum">;
def Kiln_ReduceMinOp : Kiln_ReduceOp<"reduce_min", "ReduceMin", "the minimum">;

def Kiln_CumSumOp : Kiln_Op<"cumsum">, Kiln_OpTable<"reduce", "f32"> {
  let summary = "ONNX CumSum: running sums along one axis";
  let description = [{
    Running sums of `input` along the dim named by the scalar (or
    one-element) `axis` operand, negative counting from the back:
    `y[..., i, ...] = sum_{j <= i} x[..., j, ...]`. `exclusive = 1` leaves out
    the element itself (`j < i`), `reverse = 1` sums from the end. Older
    exports number positions with it: `cumsum(attention_mask) - 1`.

    Example:

    ```mlir
    %y = kiln.cumsum %x, %axis {exclusive = 0 : i64, reverse = 0 : i64}
        : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, Kiln_IndexTensor:$axis, I64Attr:$exclusive,
                   I64Attr:$reverse);
  let results = (outs Kiln_NumericTensor:$output);
  let assemblyFormat = "$input `,` $axis attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Everything else lives in its own include to keep files short.
//===----------------------------------------------------------------------===//

include "compiler/dialect/KilnTensorOps.td"
include "compiler/dialect/KilnFusedOps.td"
include "compiler/dialect/KilnRoutingOps.td"

#endif // KILN_OPS_TD
