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
// The runtime's op table. Every op of the dialect derives from Kiln_OpTable
// once; tools/gen_op_list.py reads these records and writes
// runtime/src/core/ops.def, the one list of ops a plan can hold, which the
// runtime's shape table and every backend's kernel table are checked
// against (the runtime itself never reads .td files).
//   family: the op family whose files hold its shape rule and kernels:
//           pointwise, movement, gather, reduce, norm, products, attention,
//           collective; "" for an op that never reaches a plan (constant:
//           a weight).
//   half:   "f32" when f16/bf16 operands are computed in f32 (the shape rule
//           is written for f32 and gives the operands' half type), "native"
//           when the kernels read and write half as it is.
//===----------------------------------------------------------------------===//

class Kiln_OpTable<string family, string half = "native"> {
  string opTableFamily = family;
  string opTableHalf = half;
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
