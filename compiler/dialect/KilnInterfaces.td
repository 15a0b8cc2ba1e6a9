//===- KilnInterfaces.td - kiln op interfaces ---------------*- tablegen -*-===//

#ifndef KILN_INTERFACES_TD
#define KILN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Kiln_ShapeInferenceOpInterface : OpInterface<"ShapeInferenceOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    An op that can compute its result shapes (with symbolic dims) and element
    types from what the ShapeInferenceContext knows about its operands. The
    importer calls it while building ops (so imported ops have types as
    precise as their inputs allow) and the kiln-shape-inference pass calls it
    again after folding. An op that also computes small integer tensors
    (Shape, Gather of a shape, Concat of dims, ...) records their element
    values so that shape consumers such as Reshape can use them.
  }];
  let methods = [
    InterfaceMethod<[{
        Records every result's element type and shape in `ctx` (and element
        values where known). Fails, with an error at the op, only when the
        operands are inconsistent (e.g. a Reshape to a different element
        count).
      }],
      "::mlir::LogicalResult", "inferShapes",
      (ins "::kiln::ShapeInferenceContext &":$ctx)>,
  ];
}

#endif // KILN_INTERFACES_TD
