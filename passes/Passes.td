//===- Passes.td - kiln pass declarations ------------------*- tablegen -*-===//
//
// Every kiln pass is declared here, with its options as Option<> fields, and
// lives in passes/<PassName>.cpp. mlir-tblgen -gen-pass-decls -name Kiln
// generates the pass bases, create<Pass>() factories and registerKilnPasses().
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_TD
#define KILN_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Cleanup phase
//===----------------------------------------------------------------------===//

def KilnShapeInference : Pass<"kiln-shape-inference", "mlir::func::FuncOp"> {
  let summary = "Recompute kiln result types from operand types and constants";
  let description = [{
    Walks the graph in order and asks every op implementing
    `KilnShapeInferenceOpInterface` for its result shapes, refining result
    types to static dimensions wherever they are derivable (from static
    operand dims or from constant shape operands) and leaving `?` otherwise.
    Integer "shape" values (Shape -> Gather -> Concat chains) are tracked
    symbolically, so a Reshape whose shape is built from the input's batch
    and sequence dims gets those dims' names. A type is only ever refined,
    never changed incompatibly: a conflict with a declared static dim is an
    error at the op. The function signature follows its returned values,
    and unnamed ("") entries of the results' `kiln.dims` get the symbolic
    names inferred for them.

    With `annotate-dims`, every op result with a dynamic dim also gets the
    symbolic names of its dims as a `kiln.dims` attribute (an array per
    result), which makes the symbolic inference visible in tests.
  }];
  let dependentDialects = ["kiln::KilnDialect"];
  let options = [
    Option<"annotateDims", "annotate-dims", "bool", /*default=*/"false",
           "Attach the symbolic dims of results as a kiln.dims attribute">,
  ];
}

def KilnFoldShapes : Pass<"kiln-fold-shapes", "mlir::func::FuncOp"> {
  let summary = "Fold shape subgraphs to constants";
  let description = [{
    Alternates shape inference with kiln's op folders and canonicalization
    patterns until nothing changes: Shape of static dims becomes a constant,
    Gather/Concat/Unsqueeze/Squeeze/Slice/Cast/arithmetic/Equal/Where/Range/
    ConstantOfShape/Reshape/Expand of constants fold, and identity
    Reshape/Expand/Identity/Cast disappear. Only small tensors fold (see
    `max-fold-elements`), so weights are never duplicated.
  }];
  let dependentDialects = ["kiln::KilnDialect"];
  let options = [
    Option<"maxIterations", "max-iterations", "unsigned", /*default=*/"16",
           "Maximum rounds of shape inference + folding">,
  ];
}

//===----------------------------------------------------------------------===//
// Later phases (inject, ragged, partition, quantize, plan) add their `def`
// blocks below this line, one per pass, each implemented in
// passes/<PassName>.cpp.
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Plan phase
//===----------------------------------------------------------------------===//

def KilnMarkHost : Pass<"kiln-mark-host", "mlir::func::FuncOp"> {
  let summary = "Mark the integer tensors that compute shapes as host tensors";
  let description = [{
    The runtime evaluates shape computations on the host while it binds input
    shapes, before it sizes the arena. This pass finds them: operands that are
    shapes, axes or shape-like indices (reshape/expand `shape`, slice
    `starts`/`ends`/`axes`/`steps`, constant_of_shape's input, range's inputs,
    squeeze/unsqueeze/reduce `axes`, split `split`, tile `repeats`, trilu `k`)
    are host tensors, and so, transitively, are the operands of the ops that
    produce them, except that `shape` only reads its input's shape. Every
    such op gets a `kiln.host` unit attribute (all of an op's results are host
    or none are). Graph inputs and constants end the walk.

    A host tensor that would depend on data computed by a float compute op
    (a matmul, softmax, ...) is an error at that op, naming it and the shape
    operand that needs it: the runtime cannot know a shape before running the
    model.

    Example: `%s = kiln.shape %x`, `%d = kiln.gather %s, %c0`,
    `%r = kiln.reshape %y, %d` marks the gather and the shape ops, not `%x`'s
    producer.
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}

def KilnMemoryPlan : Pass<"kiln-memory-plan", "mlir::func::FuncOp"> {
  let summary = "Assign activation tensors to reusable arena slots";
  let description = [{
    Liveness over the function's op order: an activation (an op result that
    is neither a constant nor a host tensor) lives from the op that writes it
    to its last reader; a returned value lives to the end. Activations are
    colored greedily in op order: each takes the free slot whose size fits it
    best (or, if none is large enough, the largest free slot, which grows the
    arena least), else a new slot. A slot is free again only after the op that
    last reads it, because kernels do not run in place.

    A view (the result of a reshape, flatten, squeeze or unsqueeze of an
    activation of the same element type) takes its operand's slot instead:
    the two are the same bytes, the kernel copies nothing, and the slot stays
    taken until the last reader of either. A returned view, or a view of a
    returned tensor, gets a slot of its own.

    Sizes compare by number of dynamic dims first, then static bytes, so that
    a `[?, ?, 4096]` tensor counts as larger than a `[?, 4096]` one.

    Each op gets `kiln.slots` (one i64 per result, -1 for results without a
    slot) and the function gets `kiln.memory_plan` with `num_slots`,
    `slot_static_bytes` (per slot, or -1 if any tensor in it has a dynamic
    shape) and `unshared_static_bytes` (-1 if any activation is dynamic).
    Run `kiln-mark-host` first so host tensors stay out of the arena.
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}

def KilnMaterializeOutputs : Pass<"kiln-materialize-outputs", "mlir::func::FuncOp"> {
  let summary = "Give every graph output a tensor of its own";
  let description = [{
    The plan names each graph output by its ONNX name, and the runtime
    returns outputs from the arena. Folding can leave a returned value that
    is a graph input, a constant, or the same value returned twice (an ONNX
    Identity, a Shape of a static tensor): its name would be lost and it
    would have no arena slot. This pass returns a `kiln.identity` copy in
    those cases, so every output is an activation produced by an op and used
    once by the return.

    ```mlir
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      return %x : tensor<2xf32>
    }
    // becomes
    //   %0 = kiln.identity %x : tensor<2xf32> -> tensor<2xf32>
    //   return %0
    ```
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}


//===----------------------------------------------------------------------===//
// Inject phase
//===----------------------------------------------------------------------===//

def KilnInject : Pass<"kiln-inject", "mlir::ModuleOp"> {
  let summary = "Fuse transformer subgraphs into kiln's fused ops and report what fused";
  let description = [{
    Kernel injection as rewrite patterns over the graphs real exporters emit
    (docs/injection.md lists the forms). In order:

    1. norms (RMSNorm and the LayerNorm decomposition, rooted at
       ReduceMean), GELU (erf and tanh forms), rotary embedding
       (rotate-half, full and partial) and attention (rooted at Softmax,
       looking through the GQA repeat of the KV cache);
    2. MatMul/Gemm with a constant weight (and a bias Add) become `linear`,
       and the 2-D reshapes of Gemm exports around them disappear;
    3. ReLU, GELU and SiLU fold into the linear that feeds them;
    4. gated MLPs (separate or fused gate/up projections);
    5. residual Add + norm, and sibling projections of one input (Q, K, V)
       into one linear over concatenated weights.

    Every bail-out names its reason. The pass then groups the function's
    ops by transformer layer (from the ONNX node names: `layers.N`, `h.N`,
    `layer.N`, `blocks.N`) and attaches the injection report to the module
    as `kiln.injection_report` (text) and `kiln.injection_missing` (one
    string per layer whose attention, norms or MLP stayed unfused, with the
    reason). `kiln build --report` prints the first;
    `--require-injection` fails on the second.
  }];
  let dependentDialects = ["kiln::KilnDialect"];
  let options = [
    Option<"fuseQkv", "fuse-qkv", "bool", /*default=*/"true",
           "Fuse sibling projections of one input into one linear">,
    Option<"fuseResidualNorm", "fuse-residual-norm", "bool", /*default=*/"true",
           "Fuse a residual Add into the norm that follows it">,
  ];
}

def KilnUserPatterns : Pass<"kiln-user-patterns", "mlir::ModuleOp"> {
  let summary = "Apply user-written PDL rewrite patterns from a file";
  let description = [{
    Loads `patterns-file`, an MLIR file of `pdl.pattern` ops (write them
    in PDLL and compile with `mlir-pdll-19 file.pdll -x=mlir`, or write PDL
    directly), and applies them greedily to every function. `kiln build
    --patterns FILE` runs it at the start of the inject phase, so a pattern
    can rewrite an unusual spelling (a custom activation, say) into a form
    kiln-inject already fuses, or create kiln's fused ops directly.
    docs/injection.md has a worked example.

    The number of rewrites is attached to the module as
    `kiln.user_pattern_rewrites`. A file that is missing, does not parse or
    holds no `pdl.pattern` is an error.
  }];
  let dependentDialects = ["kiln::KilnDialect", "mlir::pdl::PDLDialect",
                           "mlir::pdl_interp::PDLInterpDialect"];
  let options = [
    Option<"patternsFile", "patterns-file", "std::string", /*default=*/"\"\"",
           "The MLIR file of pdl.pattern ops to apply">,
  ];
}

//===----------------------------------------------------------------------===//
// Ragged phase
//===----------------------------------------------------------------------===//

def KilnRagged : Pass<"kiln-ragged", "mlir::ModuleOp"> {
  let summary = "Rewrite an injected decoder to a ragged batch over a paged KV cache";
  let description = [{
    For a decoder whose attention was injected and whose KV cache is the
    model's own past/present tensors (Optimum's interface), rewrites @main
    so that a serving engine can run many sequences in one step:

    - `input_ids` and `position_ids` carry one flat batch of T tokens
      ([1, T]); `attention_mask` and the `past_key_values.*` inputs and
      `present.*` outputs disappear;
    - every `attention` becomes `paged_attention` over new inputs
      `kv_cache.N.key` / `kv_cache.N.value` ([num_blocks, Hkv, block_size,
      D], owned by the runtime and written in place), with the per-step
      inputs `kv_slots` [T], `query_start` [N + 1], `context_lens` [N] and
      `block_tables` [N, max_blocks];
    - the LM head runs only on the rows named by `logits_indices` [L], so
      `logits` is [1, L, vocab].

    A model without a position_ids input whose positions are
    `range(past, past + seq_len, 1)`, past read from a past_key_values
    input's sequence dim (Hugging Face's `cache_position`, as Gemma's export
    computes them), gets a `position_ids` input in their place. The LM head
    is found through one upcast, one scaling by a constant (Granite's
    `logits / logits_scaling`) and one soft-cap `c * tanh(x / c)` (Gemma 2's
    final_logit_softcapping), which stay after the new head.

    With `sliding-window = W` (config.json's sliding_window), the
    attentions whose mask is computed with the constant W (the export's
    `kv > q - W`, `k <= q - W` or `tril(.., -W)`) get `window = W`; when no
    mask mentions W, the layers `sliding-layers` marks 1 (config.json's
    layer_types), or every layer when that list is empty or does not match
    the layer count. Each attention's `softcap` carries over.

    The module gets `kiln.interface = "ragged"`. A graph it cannot rewrite
    (no injected attention, attention whose K/V are not past ++ new, no
    position_ids input and no such range, an attention_mask or a
    past_key_values input that still feeds something else) is left as it
    is, with the reason attached as `kiln.ragged_skipped`.
  }];
  let options = [
    Option<"slidingWindow", "sliding-window", "int64_t", /*default=*/"0",
           "The model's sliding window (config.json sliding_window); 0: none">,
    ListOption<"slidingLayers", "sliding-layers", "int64_t",
               "Per layer, 1 where the layer uses the window (config.json layer_types)">,
  ];
  let dependentDialects = ["kiln::KilnDialect"];
}

def KilnTokenMajorAttention : Pass<"kiln-token-major-attention", "mlir::ModuleOp"> {
  let summary = "Let paged_attention and rotary read token-major q, k, v";
  let description = [{
    After kiln-ragged: a `paged_attention` whose q and k are
    `transpose(x, [0, 2, 1, 3])`, each optionally rotated by `rotary`, whose
    v is such a transpose, and whose result is only transposed back with
    the same perm, takes the untransposed [1, T, H, D] tensors instead, with
    `layout = "bshd"`; the rotaries apply to them directly (their cos/sin,
    [c0, 1, c2, R], reshaped to [c0, c2, 1, R]) and the four transposes
    disappear. Anything else (another reader of an intermediate, another
    perm, cos/sin with a head dim other than 1) is left as it is.
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Quantize phase
//===----------------------------------------------------------------------===//

def KilnConvertFloatType : Pass<"kiln-convert-float-type", "mlir::ModuleOp"> {
  let summary = "Convert an f32 model to f16 or bf16, keeping its logits f32";
  let description = [{
    What `model.half()` (or `.to(torch.bfloat16)`) does to a PyTorch model,
    on the kiln graph: f32 weights are rounded to `to` (nearest, ties to
    even; NaN stays NaN, inf stays inf), f32 graph inputs (the KV
    cache: `past_key_values.*`, `kv_cache.*`) take that type, and ops
    compute in it. Integer and bool tensors are untouched.

    A finite constant never becomes inf: one past the type's largest finite
    value (a ConstantOfShape fill too) saturates to it, keeping its sign.
    That is what a mask's `finfo(float32).min` needs: rounded, it would be
    -inf in both types, and `0 * -inf` is NaN; saturated it is the type's
    own `finfo.min`, the value an export made in that type holds.

    These stay f32:
    - values computed from integer data: a Cast of an integer tensor to f32
      (positions, masks) and everything computed from it with constants
      only, such as rotary angles and cos/sin. Half has 11 significant bits
      and bfloat16 8, so positions past 2048 (256) would round, and so
      would the angles. Constants that integer data only moves or selects
      (an Expand of inv_freq to the batch, an embedding Gather, the Trilu
      and ScatterND that older exports build a causal mask with) count as
      constants here: they take their readers' type. Where such a value
      meets a half op, a Cast to `to` joins them;
    - the operands that the fused ops read in their own dtype: a norm's
      scale and bias (rms_norm, add_rms_norm, add_layer_norm) and rotary's
      cos and sin, with no Cast;
    - ops over constants only, when an f32 op (or operand) reads them;
    - every graph output but the KV cache's (`present.*`): a final Cast
      back to f32 keeps `logits` f32 for the samplers.

    A Cast to f32 of a converted value (the identity on an f32 graph)
    disappears. An op keeps its own constants' type: a constant read both
    by half and by f32 ops is converted for the half ones only.

    ```mlir
    %w = kiln.constant dense<0.1> : tensor<8x8xf32>
    %y = kiln.linear %x, %w {activation = "none"} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
    // with to=f16 becomes
    %w = kiln.constant dense<9.997550e-02> : tensor<8x8xf16>
    %y = kiln.linear %x, %w {activation = "none"} : (tensor<?x8xf16>, tensor<8x8xf16>) -> tensor<?x8xf16>
    ```
  }];
  let dependentDialects = ["kiln::KilnDialect"];
  let options = [
    Option<"to", "to", "std::string", /*default=*/"\"f16\"",
           "The float type to convert to: f16 or bf16">,
  ];
}

def KilnQuantizeInt8 : Pass<"kiln-quantize-int8", "mlir::ModuleOp"> {
  let summary = "Store the f32 weights of linear and gated_mlp as int8 with per-column scales";
  let description = [{
    Weight-only int8 quantization, symmetric, one f32 scale per output
    column: for a weight `W` `[K, N]`, `scale[j] = max_k |W[k, j]| / 127`
    and `q[k, j] = round(W[k, j] / scale[j])` (to nearest, ties to even),
    in `[-127, 127]`; a column of zeros gets scale 0. Activations stay f32,
    and the kernels multiply in f32, so only the weights' rounding changes
    the numbers (at most half a step, `scale / 2`, per element).

    Rewritten: a `kiln.linear` with an f32 `x` whose weight is a 2-D f32
    `kiln.constant` becomes `kiln.linear_q8` (bias and activation kept); a
    `kiln.gated_mlp` whose two weights are such constants becomes
    `kiln.gated_mlp_q8`. Every other op is left alone: a weight computed at
    run time, a half or f64 product, a gated MLP with only one constant
    weight. A constant read by several products is quantized once; the f32
    original stays only if something else reads it (a tied embedding).
    A weight with a NaN or infinite element fails the pass, naming it.

    With `activations=int8` the new ops get `activations = "int8"`: their
    activation rows are quantized too, at run time, and multiplied int8 x
    int8 (docs/fused-ops.md). The weights are the same either way.

    ```mlir
    %w = kiln.constant dense<...> : tensor<8x4xf32>
    %y = kiln.linear %x, %w {activation = "none"} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
    // becomes
    %q = kiln.constant dense<...> : tensor<8x4xi8>
    %s = kiln.constant dense<...> : tensor<4xf32>
    %y = kiln.linear_q8 %x, %q, %s {activation = "none"}
        : (tensor<?x8xf32>, tensor<8x4xi8>, tensor<4xf32>) -> tensor<?x4xf32>
    ```
  }];
  let dependentDialects = ["kiln::KilnDialect"];
  let options = [
    Option<"activations", "activations", "std::string", /*default=*/"\"f32\"",
           "f32 (weight-only int8) or int8 (activation rows quantized at run time too)">,
  ];
}

def KilnUpcastOutputs : Pass<"kiln-upcast-outputs", "mlir::ModuleOp"> {
  let summary = "Cast f16/bf16 graph outputs other than the KV cache to f32";
  let description = [{
    The runtime's samplers and `kiln embed` read f32 `logits` and token
    states. A model that is half already (a build with no dtype keeps its
    types) may return them in f16 or bf16, as Hugging Face models do since
    they stopped upcasting their logits; this pass appends a Cast to f32 to
    every such output. The KV cache outputs (`present.*`) keep their type,
    since the next step reads them back as its past.

    ```mlir
    return %l, %k : tensor<?x8xf16>, tensor<1x2x?x4xf16>   // logits, present.0.key
    // becomes
    %0 = kiln.cast %l {to = 1 : i64} : (tensor<?x8xf16>) -> tensor<?x8xf32>
    return %0, %k : tensor<?x8xf32>, tensor<1x2x?x4xf16>
    ```
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}

#endif // KILN_PASSES_TD
