//===- KilnRoutingOps.td - mixture-of-experts routing ops --*- tablegen -*-===//
//
// The ONNX ops a mixture-of-experts export routes tokens with (TopK,
// OneHot, NonZero, ScatterElements). They exist for the importer and for
// kiln-inject, which fuses a whole MoE block into `kiln.moe`; none reaches
// a plan (family ""): the build refuses a plan that still holds one, naming
// the layer (NonZero's result shape depends on values, which the runtime's
// ahead-of-time shapes cannot express).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ROUTING_OPS_TD
#define KILN_ROUTING_OPS_TD

def Kiln_TopKOp : Kiln_Op<"top_k">, Kiln_OpTable<""> {
  let summary = "ONNX TopK: the k largest (or smallest) values along an axis and their indices";
  let description = [{
    `values` and `indices` (i64) have `input`'s shape with dim `axis`
    replaced by k (the one-element `k` operand). `largest = 1` picks the
    largest, `sorted = 1` orders them.

    Example:

    ```mlir
    %v, %i = kiln.top_k %p, %k {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}
        : (tensor<?x8xf32>, tensor<1xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, Kiln_I64Tensor:$k, I64Attr:$axis,
                   I64Attr:$largest, I64Attr:$sorted);
  let results = (outs Kiln_NumericTensor:$values, Kiln_I64Tensor:$indices);
  let assemblyFormat = "$input `,` $k attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_OneHotOp : Kiln_Op<"one_hot">, Kiln_OpTable<""> {
  let summary = "ONNX OneHot: indices to one-hot vectors of length depth";
  let description = [{
    Inserts a dim of `depth` (a one-element operand) at `axis`; element j
    is `values[1]` where j equals the index (negative counting from depth)
    and `values[0]` elsewhere.

    Example:

    ```mlir
    %m = kiln.one_hot %idx, %depth, %values {axis = -1 : i64}
        : (tensor<?x2xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x2x8xi64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$indices, Kiln_NumericTensor:$depth,
                   Kiln_Tensor:$values, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$indices `,` $depth `,` $values attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_NonZeroOp : Kiln_Op<"non_zero">, Kiln_OpTable<""> {
  let summary = "ONNX NonZero: the indices of the nonzero elements";
  let description = [{
    `[rank, n]` i64: column c holds the index tuple of the c-th nonzero
    element in row-major order; n depends on the values.

    Example:

    ```mlir
    %nz = kiln.non_zero %m : (tensor<2x?xi1>) -> tensor<2x?xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_I64Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Kiln_ScatterElementsOp : Kiln_Op<"scatter_elements">, Kiln_OpTable<""> {
  let summary = "ONNX ScatterElements: write updates at per-element indices along an axis";
  let description = [{
    A copy of `data` where `updates[..., i, ...]` replaces (or, with
    `reduction` "add", "mul", "max", "min", combines with) the element at
    index `indices[..., i, ...]` along `axis`.

    Example:

    ```mlir
    %y = kiln.scatter_elements %data, %idx, %upd {axis = 0 : i64, reduction = "none"}
        : (tensor<?x64xf32>, tensor<?x64xi64>, tensor<?x64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, Kiln_Tensor:$updates,
                   I64Attr:$axis, StrAttr:$reduction);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$data `,` $indices `,` $updates attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // KILN_ROUTING_OPS_TD
