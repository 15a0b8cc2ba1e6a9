//===- KilnCollectiveOps.td - tensor-parallel collectives --*- tablegen -*-===//
//
// The ops kiln-partition adds to a rank's graph
// (docs/tensor-parallel.md is the contract with the runtime). They run over
// the plan's tp_size ranks, which all execute the same sequence of
// collectives: an op that one rank dropped or merged would hang the others,
// so these are not Pure (neither CSE nor DCE touches them). Verifiers and
// shape functions live in KilnCollectiveOps.cpp. A file of its own (not
// included by KilnOps.td) with its own generated header, which only the
// partition pass and the plan writer's users need; the dialect registers
// the ops in KilnDialect::initialize.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COLLECTIVE_OPS_TD
#define KILN_COLLECTIVE_OPS_TD

include "compiler/dialect/KilnDialect.td"
include "compiler/dialect/KilnInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Kiln_CollectiveOp<string mnemonic>
    : Op<Kiln_Dialect, mnemonic,
         [DeclareOpInterfaceMethods<Kiln_ShapeInferenceOpInterface>, MemoryEffects<[MemWrite]>]>,
    Kiln_OpTable<"collective"> {
  let hasVerifier = 1;
}

def Kiln_AllReduceOp : Kiln_CollectiveOp<"all_reduce"> {
  let summary = "elementwise reduction of one tensor over every rank";
  let description = [{
    Every rank passes a tensor of the same shape and gets their elementwise
    `reduction` back (only `"sum"` today). kiln-partition puts one after each
    row-parallel linear (o_proj, down) and after a vocab-split embedding
    lookup, whose per-rank results are partial sums.

    Example:

    ```mlir
    %y = kiln.all_reduce %x {reduction = "sum"} : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x, StrAttr:$reduction);
  let results = (outs Kiln_FloatTensor:$y);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Kiln_AllGatherOp : Kiln_CollectiveOp<"all_gather"> {
  let summary = "concatenation of every rank's tensor along one axis";
  let description = [{
    Rank r passes a tensor whose extent along `axis` is `sizes[r]` (every
    other dim the same on all ranks); every rank gets the ranks' tensors
    concatenated along `axis` in rank order, of extent `sum(sizes)`. `sizes`
    has one entry per rank, so uneven splits (and a rank with 0) are
    explicit. kiln-partition gathers the vocab-split LM head's logits.

    Example:

    ```mlir
    %y = kiln.all_gather %x {axis = 2 : i64, sizes = array<i64: 50, 50, 28>}
        : (tensor<1x?x50xf32>) -> tensor<1x?x128xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x, I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Kiln_FloatTensor:$y);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

#endif // KILN_COLLECTIVE_OPS_TD
