//===- KilnDialect.td - the kiln dialect --------------------*- tablegen -*-===//
//
// The kiln dialect and the type constraints its ops share. The ops themselves
// are in KilnOps.td; docs/ops.md is the contract they implement.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_TD
#define KILN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let summary = "Transformer inference ops imported from ONNX";
  let description = [{
    One kiln op per supported ONNX op, with the semantics of the op's newest
    ONNX version (opset 21) whatever opset the model was exported at. Values
    are builtin tensors whose dynamic dims are `?`. A graph is a `func.func`
    whose arguments and results carry their ONNX names (`kiln.name`) and
    symbolic dim names (`kiln.dims`). Weights and constants are
    `kiln.constant` ops.
  }];
  let cppNamespace = "::kiln";
  // Folders produce attributes; the dialect turns them back into
  // kiln.constant ops.
  let hasConstantMaterializer = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints. Element types are those of the plan's DType
// (schemas/plan.fbs): f32, f16, bf16, f64, i8, ui8, i32, i64 and i1 (bool).
// Tensors may be unranked only where the importer could not derive a rank.
//===----------------------------------------------------------------------===//

defvar Kiln_AllElementTypes = [F32, F16, BF16, F64, I8, UI8, I32, I64, I1];
defvar Kiln_NumericElementTypes = [F32, F16, BF16, F64, I8, UI8, I32, I64];

def Kiln_Tensor : TensorOf<Kiln_AllElementTypes>;
def Kiln_NumericTensor : TensorOf<Kiln_NumericElementTypes>;
def Kiln_SignedTensor : TensorOf<[F32, F16, BF16, F64, I8, I32, I64]>;
def Kiln_FloatTensor : TensorOf<[F32, F16, BF16, F64]>;
def Kiln_BoolTensor : TensorOf<[I1]>;
def Kiln_IndexTensor : TensorOf<[I32, I64]>;
def Kiln_I64Tensor : TensorOf<[I64]>;

#endif // KILN_DIALECT_TD
