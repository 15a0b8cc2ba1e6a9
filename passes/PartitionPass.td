//===- PartitionPass.td - kiln-partition's declaration ------*- tablegen -*-===//
//
// Declared apart from Passes.td so that adding it did not change the header
// every pass includes (Passes.h.inc); mlir-tblgen -gen-pass-decls
// -name KilnPartition makes its base, factory and
// registerKilnPartitionPasses(), which registerPartitionPass()
// (passes/PartitionPass.h) wraps for the tools.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PARTITION_PASS_TD
#define KILN_PARTITION_PASS_TD

include "mlir/Pass/PassBase.td"

def KilnPartition : Pass<"kiln-partition", "mlir::ModuleOp"> {
  let summary = "Rewrite @main into one tensor-parallel rank's graph";
  let description = [{
    Turns the injected (and usually ragged) @main into the graph rank `rank`
    of `tp-size` runs (docs/tensor-parallel.md has the rules). The driver
    clones the module once per rank and runs this pass on each clone.

    AutoTP:
    - attention: the Q/K/V projection (one fused linear + split, or three
      linears) is split by heads into three linears with column slices;
      query heads are shared unevenly (the first H % N ranks get one more,
      a rank may get none), a GQA rank keeps the KV heads its query heads
      read (replicated on several ranks when there are fewer KV heads than
      ranks); the reshapes, rotaries, paged_attention and the KV cache
      inputs get the rank's head counts; o_proj is split by rows and
      followed by `all_reduce`;
    - gated_mlp: w_gate_up by columns (gate and up blocks alike), w_down
      by rows, then `all_reduce`; a linear -> (gelu ...) -> linear MLP
      likewise;
    - a row-parallel linear's bias is added on rank 0 only;
    - the token embedding (a gather from a [V, H] weight) is split by
      vocabulary: a masked lookup, then `all_reduce`;
    - the LM head (the linear that makes `logits`) is split by vocabulary
      columns, then `all_gather` of the logits along the vocabulary;
    - everything else (norms, anything unrecognised) is replicated.

    `row-parallel` (kiln's injection_policy) names linears by ONNX
    node-name glob: each is split by rows with an `all_reduce`, and the
    linears that feed it (through elementwise ops) by columns.

    A layer that cannot be split stays whole on every rank (correct, just
    not partitioned) and the report says why; with `require-all` that is
    an error naming the layer. Split weights are constants with a
    `kiln.shard` attribute (the plan's ShardSpec plus the unsplit value).
    The module gets `kiln.partition_report`, a JSON string.
  }];
  let dependentDialects = ["kiln::KilnDialect"];
  let options = [
    Option<"tpSize", "tp-size", "int64_t", /*default=*/"1", "Number of ranks">,
    Option<"rank", "rank", "int64_t", /*default=*/"0", "The rank whose graph to build">,
    ListOption<"rowParallel", "row-parallel", "std::string",
               "ONNX node-name globs of row-parallel linears (injection_policy)">,
    Option<"requireAll", "require-all", "bool", /*default=*/"false",
           "Fail on a layer that cannot be split instead of replicating it">,
  ];
}

#endif // KILN_PARTITION_PASS_TD
