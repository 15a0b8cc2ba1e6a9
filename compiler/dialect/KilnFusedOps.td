//===- KilnFusedOps.td - kiln fused transformer ops --------*- tablegen -*-===//
//
// Included from KilnOps.td. The ops the inject phase fuses transformer
// subgraphs into (docs/fused-ops.md is the contract with the runtime: operand
// order, attribute names and semantics). None of them is an ONNX op; the
// importer never makes them. Verifiers and shape functions live in
// KilnFusedOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FUSED_OPS_TD
#define KILN_FUSED_OPS_TD

class Kiln_FusedOp<string mnemonic, list<Trait> traits = []> : Kiln_Op<mnemonic, traits> {
  let hasVerifier = 1;
}

def Kiln_RmsNormOp : Kiln_FusedOp<"rms_norm">, Kiln_OpTable<"norm", "f32"> {
  let summary = "fused RMSNorm over the last dim";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * scale`, the mean over the last dim,
    computed in f32 whatever the element type (what Llama's exported
    Cast / Pow / ReduceMean / Add / Sqrt / Div / Mul chain computes).

    Example:

    ```mlir
    %y = kiln.rms_norm %x, %w {epsilon = 9.99999997E-7 : f32}
        : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x, Kiln_FloatTensor:$scale, F32Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$y);
  let assemblyFormat = "$x `,` $scale attr-dict `:` functional-type(operands, results)";
}

def Kiln_AddRmsNormOp : Kiln_FusedOp<"add_rms_norm">, Kiln_OpTable<"norm", "f32"> {
  let summary = "fused residual add + RMSNorm";
  let description = [{
    `sum = a + b` (same shapes: the residual stream and a block's output),
    and `y = rms_norm(sum, scale)`. One pass over the rows instead of two.

    Example:

    ```mlir
    %sum, %y = kiln.add_rms_norm %a, %b, %w {epsilon = 9.99999997E-7 : f32}
        : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
        -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>)
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$a, Kiln_FloatTensor:$b, Kiln_FloatTensor:$scale,
                   F32Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$sum, Kiln_FloatTensor:$y);
  let assemblyFormat = "$a `,` $b `,` $scale attr-dict `:` functional-type(operands, results)";
}

def Kiln_AddLayerNormOp : Kiln_FusedOp<"add_layer_norm">, Kiln_OpTable<"norm", "f32"> {
  let summary = "fused residual add + LayerNorm over the last dim";
  let description = [{
    `sum = a + b` (same shapes) and `y = layer_normalization(sum)` over the
    last dim with `scale` and the optional `bias`.

    Example:

    ```mlir
    %sum, %y = kiln.add_layer_norm %a, %b, %g, %beta {epsilon = 9.99999974E-6 : f32}
        : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>)
        -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>)
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$a, Kiln_FloatTensor:$b, Kiln_FloatTensor:$scale,
                   Optional<Kiln_FloatTensor>:$bias, F32Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$sum, Kiln_FloatTensor:$y);
  let assemblyFormat =
      "$a `,` $b `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

def Kiln_GeluOp : Kiln_FusedOp<"gelu">, Kiln_OpTable<"pointwise", "f32"> {
  let summary = "GELU, exact (erf) or tanh-approximated";
  let description = [{
    `approximate = "none"`: `0.5 x (1 + erf(x / sqrt(2)))`;
    `approximate = "tanh"`: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.

    Example:

    ```mlir
    %y = kiln.gelu %x {approximate = "tanh"} : (tensor<?x256xf32>) -> tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x, StrAttr:$approximate);
  let results = (outs Kiln_FloatTensor:$y);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Kiln_LinearOp : Kiln_FusedOp<"linear">, Kiln_OpTable<"products", "f32"> {
  let summary = "x @ w + bias with a fused activation";
  let description = [{
    `activation(x @ w + bias)` for `x` of shape `[..., K]`, a 2-D weight `w`
    of shape `[K, N]` and an optional `bias` of shape `[N]`. `activation` is
    one of `none`, `relu`, `gelu`, `gelu_tanh`, `silu`. Fused QKV
    projections are one linear whose weight concatenates the three.

    Example:

    ```mlir
    %y = kiln.linear %x, %w, %b {activation = "gelu"}
        : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x, Kiln_FloatTensor:$w, Optional<Kiln_FloatTensor>:$bias,
                   StrAttr:$activation);
  let results = (outs Kiln_FloatTensor:$y);
  let assemblyFormat = "$x `,` $w (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

def Kiln_GatedMlpOp : Kiln_FusedOp<"gated_mlp">, Kiln_OpTable<"products", "f32"> {
  let summary = "gated MLP: (act(x @ Wg) * (x @ Wu)) @ Wd";
  let description = [{
    `w_gate_up` is `[K, 2F]`: the gate projection's columns, then the up
    projection's. `w_down` is `[F, N]`. `activation` is `silu` (SwiGLU),
    `gelu` or `gelu_tanh` (GeGLU).

    Example:

    ```mlir
    %y = kiln.gated_mlp %x, %wgu, %wd {activation = "silu"}
        : (tensor<?x?x64xf32>, tensor<64x344xf32>, tensor<172x64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x, Kiln_FloatTensor:$w_gate_up,
                   Kiln_FloatTensor:$w_down, StrAttr:$activation);
  let results = (outs Kiln_FloatTensor:$y);
  let assemblyFormat = "$x `,` $w_gate_up `,` $w_down attr-dict `:` functional-type(operands, results)";
}

def Kiln_MoeOp : Kiln_FusedOp<"moe">, Kiln_OpTable<"products", "f32"> {
  let summary = "mixture of experts: softmax router, top-k, gated expert MLPs";
  let description = [{
    For each token (row of `x`, last dim H): router probabilities
    `softmax(x @ router_w)` over the E experts (`router_w` is `[H, E]`,
    computed in f32), the `top_k` most probable experts (ties: the lower
    index), their probabilities as weights (divided by their sum when
    `normalize = 1`: Mixtral, Qwen3-MoE with norm_topk_prob), and
    `y = sum_k weight_k * gated_mlp_e_k(x)` with expert e's
    `(act(x @ Wg_e) * (x @ Wu_e)) @ Wd_e`. `w_gate_up` is `[E, H, 2F]`
    (each expert's gate columns, then its up columns, as `gated_mlp`'s),
    `w_down` is `[E, F, H]`. Each expert runs only on the tokens routed to
    it.

    Example:

    ```mlir
    %y = kiln.moe %x, %wr, %wgu, %wd {activation = "silu", normalize = 1 : i64, top_k = 2 : i64}
        : (tensor<?x64xf32>, tensor<64x8xf32>, tensor<8x64x64xf32>, tensor<8x32x64xf32>)
        -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x, Kiln_FloatTensor:$router_w,
                   Kiln_FloatTensor:$w_gate_up, Kiln_FloatTensor:$w_down, I64Attr:$top_k,
                   I64Attr:$normalize, StrAttr:$activation);
  let results = (outs Kiln_FloatTensor:$y);
  let assemblyFormat = "$x `,` $router_w `,` $w_gate_up `,` $w_down attr-dict `:` "
                       "functional-type(operands, results)";
}

def Kiln_LinearQ8Op : Kiln_FusedOp<"linear_q8">, Kiln_OpTable<"products"> {
  let summary = "linear with an int8 weight and one f32 scale per column";
  let description = [{
    `linear` whose weight is stored as int8: `activation(x @ (w * scale) +
    bias)`, where `w` is `[K, N]` int8 and `scale` is `[N]` f32, one scale
    per output column (symmetric, no zero point). `x`, `bias` and the result
    are f32. The quantize phase (`kiln-quantize-int8`) makes it from a
    `linear` with a constant f32 weight. `activations` is `f32` (the default:
    the product is computed in f32 over the widened weight) or `int8`: each
    row of `x` is quantized at run time, symmetrically with one scale per
    row (`max |row| / 127`), and multiplied int8 x int8 with exact integer
    sums; the result is `row_scale * scale * sum`.

    Example:

    ```mlir
    %y = kiln.linear_q8 %x, %wq, %s {activation = "none"}
        : (tensor<?x?x64xf32>, tensor<64x256xi8>, tensor<256xf32>) -> tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x, TensorOf<[I8]>:$w, TensorOf<[F32]>:$scale,
                   Optional<Kiln_FloatTensor>:$bias, StrAttr:$activation,
                   DefaultValuedStrAttr<StrAttr, "f32">:$activations);
  let results = (outs Kiln_FloatTensor:$y);
  let assemblyFormat =
      "$x `,` $w `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

def Kiln_GatedMlpQ8Op : Kiln_FusedOp<"gated_mlp_q8">, Kiln_OpTable<"products"> {
  let summary = "gated MLP with int8 weights and one f32 scale per column";
  let description = [{
    `gated_mlp` whose two weights are stored as int8, each with an `[N]` f32
    scale per output column: `w_gate_up` `[K, 2F]` with `scale_gate_up`
    `[2F]`, and `w_down` `[F, N]` with `scale_down` `[N]`. `x` and the result
    are f32. `activations` as in `linear_q8`: with `int8`, the rows of `x`
    and of the gated hidden state are each quantized per row before their
    product.

    Example:

    ```mlir
    %y = kiln.gated_mlp_q8 %x, %wgu, %sgu, %wd, %sd {activation = "silu"}
        : (tensor<?x?x64xf32>, tensor<64x344xi8>, tensor<344xf32>, tensor<172x64xi8>,
           tensor<64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x, TensorOf<[I8]>:$w_gate_up,
                   TensorOf<[F32]>:$scale_gate_up, TensorOf<[I8]>:$w_down,
                   TensorOf<[F32]>:$scale_down, StrAttr:$activation,
                   DefaultValuedStrAttr<StrAttr, "f32">:$activations);
  let results = (outs Kiln_FloatTensor:$y);
  let assemblyFormat = "$x `,` $w_gate_up `,` $scale_gate_up `,` $w_down `,` $scale_down "
                       "attr-dict `:` functional-type(operands, results)";
}

def Kiln_RotaryOp : Kiln_FusedOp<"rotary">, Kiln_OpTable<"attention", "f32"> {
  let summary = "rotary position embedding (rotate-half or interleaved)";
  let description = [{
    Rotates the first `rotary_dim` elements of `x`'s last dim:
    `y = x * cos + rot(x) * sin`, where `rot` is rotate-half
    (`interleaved = 0`) or swaps adjacent pairs (`interleaved = 1`); the
    rest of the last dim passes through. `cos` and `sin` have x's rank,
    last dim `rotary_dim`, and every other dim 1 or x's. They are the
    graph's own (cached or computed from inv_freq), so the base and any
    scaling are the model's.

    Example:

    ```mlir
    %y = kiln.rotary %q, %cos, %sin {interleaved = 0 : i64, rotary_dim = 16 : i64}
        : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$x, Kiln_FloatTensor:$cos, Kiln_FloatTensor:$sin,
                   I64Attr:$rotary_dim, I64Attr:$interleaved);
  let results = (outs Kiln_FloatTensor:$y);
  let assemblyFormat = "$x `,` $cos `,` $sin attr-dict `:` functional-type(operands, results)";
}

def Kiln_AttentionOp : Kiln_FusedOp<"attention">, Kiln_OpTable<"attention", "f32"> {
  let summary = "scaled dot-product attention with MHA/GQA/MQA heads";
  let description = [{
    `softmax(scale * q @ k^T + mask) @ v` per head, for q `[B, Hq, Sq, D]`,
    k `[B, Hkv, Skv, D]` and v `[B, Hkv, Skv, Dv]`, where query head `h`
    reads kv head `h / (Hq / Hkv)`. The optional `mask` (rank <= 4,
    broadcasting to `[B, Hq, Sq, Skv]`) is added when it is a float tensor
    and selects when it is i1. `causal = 1` also hides key `j` from query
    `i` when `j > i + Skv - Sq`. The scores tensor is never materialized.

    Example:

    ```mlir
    %o = kiln.attention %q, %k, %v, %mask {causal = 0 : i64, scale = 2.500000e-01 : f32}
        : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x?x?xf32>)
        -> tensor<?x4x?x16xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$q, Kiln_FloatTensor:$k, Kiln_FloatTensor:$v,
                   Optional<Kiln_Tensor>:$mask, F32Attr:$scale, I64Attr:$causal,
                   OptionalAttr<F32Attr>:$softcap);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat =
      "$q `,` $k `,` $v (`,` $mask^)? attr-dict `:` functional-type(operands, results)";
}

def Kiln_PagedAttentionOp : Op<Kiln_Dialect, "paged_attention",
    [DeclareOpInterfaceMethods<Kiln_ShapeInferenceOpInterface>, MemoryEffects<[MemWrite]>]>,
    Kiln_OpTable<"attention"> {
  let summary = "attention over a runtime-owned paged KV cache, for a ragged batch";
  let description = [{
    The ragged form of `attention` (docs/fused-ops.md): T tokens of N
    sequences in one batch. Writes each token's `k_new`/`v_new` row into
    `k_cache`/`v_cache` ([num_blocks, Hkv, block_size, D], owned by the
    runtime and updated in place) at `slots`, then lets token t of sequence
    s attend causally to the first p(t) + 1 positions of its own context,
    read through `block_tables[s]`. `query_start` ([N + 1]) delimits the
    sequences' tokens and `context_lens` ([N]) counts their context,
    new tokens included. Not Pure: it writes the caches.

    Per layer, `window = W` (sliding-window attention: Mistral, Gemma 2
    and 3's local layers) hides the keys more than W - 1 positions before
    a token's own, so it reads positions max(0, p - W + 1)..p (the runtime
    may free blocks wholly before every layer's window), and `softcap = c`
    soft-caps the scaled scores to `c * tanh(s / c)`. Absent: no window,
    no cap.

    `layout` orders q, k_new, v_new and the result: "bhsd" (the default)
    [1, H, T, D], or "bshd" token-major [1, T, H, D], as the projections
    write them (kiln-token-major-attention picks it).

    Example:

    ```mlir
    %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {scale = 2.500000e-01 : f32}
        : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>,
           tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?xi64>, tensor<?xi64>,
           tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x4x?x16xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$q, Kiln_FloatTensor:$k_new, Kiln_FloatTensor:$v_new,
                   Kiln_FloatTensor:$k_cache, Kiln_FloatTensor:$v_cache, Kiln_I64Tensor:$slots,
                   Kiln_I64Tensor:$query_start, Kiln_I64Tensor:$context_lens,
                   Kiln_I64Tensor:$block_tables, F32Attr:$scale,
                   DefaultValuedStrAttr<StrAttr, "bhsd">:$layout,
                   OptionalAttr<F32Attr>:$softcap, OptionalAttr<I64Attr>:$window);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$q `,` $k_new `,` $v_new `,` $k_cache `,` $v_cache `,` $slots `,` "
                       "$query_start `,` $context_lens `,` $block_tables attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // KILN_FUSED_OPS_TD
