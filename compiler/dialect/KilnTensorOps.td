//===- KilnTensorOps.td - kiln non-elementwise ops ---------*- tablegen -*-===//
//
// Included from KilnOps.td (the single entry point for the op definitions):
// linear algebra, normalization, data movement, shape computation and
// constants.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TENSOR_OPS_TD
#define KILN_TENSOR_OPS_TD

//===----------------------------------------------------------------------===//
// Linear algebra and normalization.
//===----------------------------------------------------------------------===//

def Kiln_MatMulOp : Kiln_Op<"matmul">, Kiln_OpTable<"products", "f32"> {
  let summary = "ONNX MatMul: numpy matmul";
  let description = [{
    Matrix product with numpy semantics: 1-D operands are promoted to
    matrices and the promoted dim removed again; leading (batch) dims
    broadcast. The contraction dims must agree when both are static.

    Example:

    ```mlir
    %y = kiln.matmul %x, %w : (tensor<?x?x768xf32>, tensor<768x3072xf32>) -> tensor<?x?x3072xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$a, Kiln_NumericTensor:$b);
  let results = (outs Kiln_NumericTensor:$y);
  let assemblyFormat = "$a `,` $b " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_GemmOp : Kiln_Op<"gemm">, Kiln_OpTable<"products", "f32"> {
  let summary = "ONNX Gemm: alpha * op(A) * op(B) + beta * C";
  let description = [{
    General matrix multiply of 2-D `a` and `b` (transposed first when
    `transA`/`transB` is 1); the optional `c` broadcasts unidirectionally to
    the M x N result. The importer always sets all four attributes.

    Example:

    ```mlir
    %y = kiln.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64}
        : (tensor<?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<?x3072xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$a, Kiln_NumericTensor:$b,
                   Optional<Kiln_NumericTensor>:$c, F32Attr:$alpha, F32Attr:$beta,
                   I64Attr:$transA, I64Attr:$transB);
  let results = (outs Kiln_NumericTensor:$y);
  let assemblyFormat = "$a `,` $b (`,` $c^)? " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_LayerNormalizationOp : Kiln_Op<"layer_normalization">, Kiln_OpTable<"norm", "f32"> {
  let summary = "ONNX LayerNormalization (output Y only)";
  let description = [{
    Normalizes `x` over the dims from `axis` to the last to zero mean and
    unit variance (plus `epsilon`), then scales by `scale` and adds the
    optional bias `b`. Only the Y output exists; the importer rejects nodes
    that use Mean or InvStdDev.

    Example:

    ```mlir
    %y = kiln.layer_normalization %x, %gamma, %beta {axis = -1 : i64, epsilon = 9.99999974E-6 : f32, stash_type = 1 : i64}
        : (tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x, Kiln_FloatTensor:$scale,
                   Optional<Kiln_FloatTensor>:$b, I64Attr:$axis, F32Attr:$epsilon,
                   I64Attr:$stash_type);
  let results = (outs Kiln_FloatTensor:$y);
  let assemblyFormat = "$x `,` $scale (`,` $b^)? " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Element type and layout.
//===----------------------------------------------------------------------===//

def Kiln_CastOp : Kiln_Op<"cast">, Kiln_OpTable<"pointwise"> {
  let summary = "ONNX Cast: convert elements to another type";
  let description = [{
    Converts every element to the type named by `to`, a kiln DType number
    from schemas/plan.fbs (F32 = 1, F16 = 2, BF16 = 3, F64 = 4, I8 = 5,
    U8 = 6, I32 = 7, I64 = 8, Bool = 9), not an ONNX TensorProto type. The
    result's element type must be that type.

    Example:

    ```mlir
    %y = kiln.cast %x {to = 1 : i64} : (tensor<?x?xi64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$to);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ReshapeOp : Kiln_Op<"reshape">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Reshape: same elements, new shape";
  let description = [{
    Gives `data` the shape held by the 1-D `shape` operand. A -1 entry is
    inferred from the element count; a 0 entry copies the input dim unless
    `allowzero` is 1 (then it means an empty dim).

    Example:

    ```mlir
    %y = kiln.reshape %x, %shape {allowzero = 0 : i64} : (tensor<?x?x768xf32>, tensor<4xi64>) -> tensor<?x?x12x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_I64Tensor:$shape, I64Attr:$allowzero);
  let results = (outs Kiln_Tensor:$reshaped);
  let assemblyFormat = "$data `,` $shape " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Transpose: permute dims";
  let description = [{
    Result dim i is input dim `perm[i]`. The importer sets `perm` (ONNX's
    default reverses the dims).

    Example:

    ```mlir
    %y = kiln.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x12x64xf32>) -> tensor<?x12x?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, DenseI64ArrayAttr:$perm);
  let results = (outs Kiln_Tensor:$transposed);
  let assemblyFormat = "$data " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Concat: join tensors along an axis";
  let description = [{
    Joins one or more tensors of equal rank and element type along `axis`;
    every other dim must agree. Past-KV caches and shape vectors are built
    with it.

    Example:

    ```mlir
    %kv = kiln.concat %past, %new {axis = 2 : i64}
        : (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>) -> tensor<?x12x?x64xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$concat_result);
  let assemblyFormat = "$inputs " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_SplitOp : Kiln_Op<"split">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Split: cut a tensor into pieces along an axis";
  let description = [{
    Cuts `input` along `axis` into the sizes listed by the optional 1-D
    `split` operand, or into `num_outputs` near-equal pieces (the last one
    smaller) when `split` is absent. `num_outputs` is 0 when the ONNX node
    had none and a `split` operand is given.

    Example:

    ```mlir
    %q, %k, %v = kiln.split %qkv {axis = 2 : i64, num_outputs = 3 : i64}
        : (tensor<?x?x2304xf32>) -> (tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>)
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Optional<Kiln_I64Tensor>:$split, I64Attr:$axis,
                   I64Attr:$num_outputs);
  let results = (outs Variadic<Kiln_Tensor>:$outputs);
  let assemblyFormat = "$input (`,` $split^)? " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice", [AttrSizedOperandSegments]>, Kiln_OpTable<"movement"> {
  let summary = "ONNX Slice: strided slice along some axes";
  let description = [{
    Takes `data[starts:ends:steps]` along `axes` (default: the first
    len(starts) axes, steps 1). Indices are clamped as in ONNX, negative
    ones count from the back.

    Example:

    ```mlir
    %y = kiln.slice %x, %starts, %ends axes %axes steps %steps
        : (tensor<1x1x1024x1024xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x1024xi1>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$starts, Kiln_IndexTensor:$ends,
                   Optional<Kiln_IndexTensor>:$axes, Optional<Kiln_IndexTensor>:$steps);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$data `,` $starts `,` $ends (`axes` $axes^)? (`steps` $steps^)? "
    # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather">, Kiln_OpTable<"gather"> {
  let summary = "ONNX Gather: index along one axis";
  let description = [{
    Picks entries of `data` along `axis` at `indices` (negative indices count
    from the back). The result's rank is rank(data) + rank(indices) - 1.

    Example:

    ```mlir
    %emb = kiln.gather %wte, %ids {axis = 0 : i64} : (tensor<50257x768xf32>, tensor<?x?xi64>) -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$data `,` $indices " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_GatherNDOp : Kiln_Op<"gather_nd">, Kiln_OpTable<"gather"> {
  let summary = "ONNX GatherND: pick slices of data at index tuples";
  let description = [{
    The last dim of `indices` (m) holds tuples that address the dims
    [batch_dims, batch_dims + m) of `data`; each picks the slice of the dims
    after them. The first `batch_dims` dims of `data` and `indices` are
    batch dims and must agree. The result's shape is indices.shape[:-1] +
    data.shape[batch_dims + m:]. Negative indices count from the back; an
    index out of range is a runtime error.

    Example:

    ```mlir
    %y = kiln.gather_nd %mask, %idx {batch_dims = 0 : i64} : (tensor<?x?xi1>, tensor<?x?x2xi64>) -> tensor<?x?xi1>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_I64Tensor:$indices, I64Attr:$batch_dims);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$data `,` $indices " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ScatterNDOp : Kiln_Op<"scatter_nd">, Kiln_OpTable<"gather"> {
  let summary = "ONNX ScatterND: write slices of updates at index tuples";
  let description = [{
    The result is a copy of `data` in which, for each tuple in the last dim
    of `indices` (k entries addressing the first k dims of `data`), the
    slice at that tuple is replaced by (`reduction` = "none") or combined
    with ("add", "mul", "max", "min") the matching slice of `updates`,
    whose shape is indices.shape[:-1] + data.shape[k:]. Tuples are applied
    in order. Negative indices count from the back; an index out of range
    is a runtime error.

    Example:

    ```mlir
    %y = kiln.scatter_nd %data, %idx, %upd {reduction = "none"}
        : (tensor<?x1x?x?xf32>, tensor<?x1x?x?x4xi64>, tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_I64Tensor:$indices, Kiln_Tensor:$updates,
                   StrAttr:$reduction);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$data `,` $indices `,` $updates " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_UnsqueezeOp : Kiln_Op<"unsqueeze">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Unsqueeze: insert dims of size 1";
  let description = [{
    Inserts size-1 dims at the positions (in the result) listed by the 1-D
    `axes` operand, which ONNX requires since opset 13.

    Example:

    ```mlir
    %y = kiln.unsqueeze %x, %axes : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_I64Tensor:$axes);
  let results = (outs Kiln_Tensor:$expanded);
  let assemblyFormat = "$data `,` $axes " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_SqueezeOp : Kiln_Op<"squeeze">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Squeeze: remove dims of size 1";
  let description = [{
    Removes the size-1 dims listed by the optional 1-D `axes` operand, or
    every size-1 dim without it.

    Example:

    ```mlir
    %y = kiln.squeeze %x, %axes : (tensor<?x1x768xf32>, tensor<1xi64>) -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Optional<Kiln_I64Tensor>:$axes);
  let results = (outs Kiln_Tensor:$squeezed);
  let assemblyFormat = "$data (`,` $axes^)? " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ExpandOp : Kiln_Op<"expand">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Expand: broadcast to a shape";
  let description = [{
    Broadcasts `input` with the 1-D `shape` operand (numpy rules, so the
    result may have more dims than `shape` asks for, or larger ones).

    Example:

    ```mlir
    %y = kiln.expand %mask, %shape : (tensor<?x1x1x?xf32>, tensor<4xi64>) -> tensor<?x1x?x?xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_I64Tensor:$shape);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input `,` $shape " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_TileOp : Kiln_Op<"tile">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Tile: repeat a tensor along every dim";
  let description = [{
    Repeats `input` `repeats[i]` times along dim i; `repeats` is 1-D with
    one entry per dim.

    Example:

    ```mlir
    %y = kiln.tile %x, %repeats : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_I64Tensor:$repeats);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input `,` $repeats " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_FlattenOp : Kiln_Op<"flatten">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Flatten: collapse to a matrix";
  let description = [{
    Collapses dims [0, axis) into the result's first dim and [axis, rank)
    into its second; `axis` may be in [-rank, rank].

    Example:

    ```mlir
    %y = kiln.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ClipOp : Kiln_Op<"clip", [AttrSizedOperandSegments]>, Kiln_OpTable<"pointwise", "f32"> {
  let summary = "ONNX Clip: clamp to [min, max]";
  let description = [{
    Clamps `input` to the optional scalar bounds `min` and `max`.

    Example:

    ```mlir
    %y = kiln.clip %x min %lo max %hi : (tensor<?x8xf32>, tensor<f32>, tensor<f32>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, Optional<Kiln_NumericTensor>:$min,
                   Optional<Kiln_NumericTensor>:$max);
  let results = (outs Kiln_NumericTensor:$output);
  let assemblyFormat = "$input (`min` $min^)? (`max` $max^)? " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_TriluOp : Kiln_Op<"trilu">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Trilu: keep the upper or lower triangle";
  let description = [{
    Zeroes the elements of the last two dims outside the upper (`upper` = 1)
    or lower triangle, offset by the optional scalar diagonal `k`. Causal
    masks use it.

    Example:

    ```mlir
    %y = kiln.trilu %x, %k {upper = 1 : i64} : (tensor<?x?xf32>, tensor<i64>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Optional<Kiln_I64Tensor>:$k, I64Attr:$upper);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input (`,` $k^)? " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape computation and constants.
//===----------------------------------------------------------------------===//

def Kiln_ShapeOp : Kiln_Op<"shape">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Shape: the dims of a tensor as a 1-D i64 tensor";
  let description = [{
    Returns dims [start, end) of `data`'s shape; both are clamped to
    [0, rank] after adding rank to negative values. The importer sets `end`
    to the rank when ONNX omits it (or to INT64_MAX for an unranked input,
    which clamps to the rank). Folds to a constant when those dims are
    static.

    Example:

    ```mlir
    %s = kiln.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<?x?x768xf32>) -> tensor<3xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, I64Attr:$start, I64Attr:$end);
  let results = (outs Kiln_I64Tensor:$shape);
  let assemblyFormat = "$data " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_SizeOp : Kiln_Op<"size">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Size: the element count of a tensor as an i64 scalar";
  let description = [{
    Returns the number of elements of `data` as a 0-D i64 tensor. Like
    Shape it reads only `data`'s dims, never its values. Folds to a
    constant when `data`'s shape is static.

    Example:

    ```mlir
    %n = kiln.size %x : (tensor<?x?x768xf32>) -> tensor<i64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data);
  let results = (outs Kiln_I64Tensor:$size);
  let assemblyFormat = "$data " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ConstantOfShapeOp : Kiln_Op<"constant_of_shape">, Kiln_OpTable<"movement"> {
  let summary = "ONNX ConstantOfShape: a tensor filled with one value";
  let description = [{
    Makes a tensor of the shape held by the 1-D `input` filled with `value`;
    the element type is the result's (ONNX's `value` tensor gave it).

    Example:

    ```mlir
    %z = kiln.constant_of_shape %shape {value = 0.000000e+00 : f32} : (tensor<2xi64>) -> tensor<?x?xi64>
    ```
  }];
  let arguments = (ins Kiln_I64Tensor:$input, F32Attr:$value);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_RangeOp : Kiln_Op<"range">, Kiln_OpTable<"movement"> {
  let summary = "ONNX Range: start, start + delta, ... below limit";
  let description = [{
    Makes the 1-D sequence from scalar `start` stepping by `delta` while
    short of `limit`; its length is max(ceil((limit - start) / delta), 0).
    Position ids are built with it.

    Example:

    ```mlir
    %pos = kiln.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$start, Kiln_NumericTensor:$limit,
                   Kiln_NumericTensor:$delta);
  let results = (outs Kiln_NumericTensor:$output);
  let assemblyFormat = "$start `,` $limit `,` $delta " # "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ConstantOp : Kiln_Op<"constant", [ConstantLike, AllTypesMatch<["value", "output"]>]>,
    Kiln_OpTable<""> {
  let summary = "A constant tensor: a weight, an initializer or an ONNX Constant";
  let description = [{
    Holds `value`: a DenseElementsAttr for small tensors (so folders can read
    them) or a DenseResourceElementsAttr for weights, whose blob points at
    the bytes the importer mapped from the model or its external data
    without copying them. `name` is the ONNX initializer or output name when
    there is one. Constants never reach the plan as ops: the plan writer
    turns them into weight tensors.

    Example:

    ```mlir
    %axes = kiln.constant dense<[-1]> : tensor<1xi64>
    %w = kiln.constant {name = "lm_head.weight"} dense_resource<lm_head.weight> : tensor<768x50257xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value, OptionalAttr<StrAttr>:$name);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasVerifier = 1;
  let hasFolder = 1;
}

#endif // KILN_TENSOR_OPS_TD
