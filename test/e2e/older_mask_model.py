"""A tiny decoder whose causal mask is built "the older way", as transformers'
`_prepare_4d_causal_attention_mask_with_cache_position` builds it in
Optimum's exports (the opt-optimum fixture's graph; Falcon and StableLM
exports too): a [S, T] tensor filled with finfo(float32).min,
Trilu(upper, k=1), times (key position > query position), expanded to
[B, 1, S, T], then the padding mask written into it by a ScatterND (the
export of `causal_mask[..., :mask_length] =
causal_mask[..., :mask_length].masked_fill(padding, min)`). The Trilu stays
in the graph for decode too (the exporter traced `if sequence_length != 1`
with a longer prompt), where it keeps the fill in columns 1..past that the
Greater then zeroes: 0 * min.

One learned-position embedding, LayerNorm, `layers` attention blocks (an
additive mask, Softmax, no MLP), a final LayerNorm and an lm_head, with the
Optimum interface: input_ids, attention_mask, position_ids and
past_key_values.N.key/value in; logits and present.N.key/value out.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

VOCAB, HIDDEN, HEADS, MAX_POS = 512, 64, 4, 64
HEAD_DIM = HIDDEN // HEADS
F32_MIN = float(np.finfo(np.float32).min)


class Graph:
    """Nodes and initializers, with generated names."""

    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.n = rng, [], [], 0

    def op(self, op_type, *inputs, **attrs):
        self.n += 1
        name = f"/{op_type}_{self.n}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [name + "_output_0"],
                                           name=name, **attrs))
        return name + "_output_0"

    def const(self, value, dtype=np.int64):
        self.n += 1
        name = f"const_{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def weight(self, name, shape, scale=HIDDEN**-0.5, offset=0.0):
        w = (offset + scale * self.rng.standard_normal(shape)).astype(np.float32)
        self.inits.append(numpy_helper.from_array(w, name))
        return name

    def dim(self, tensor, axis):
        """The 1-element int64 tensor Shape(tensor)[axis]."""
        return self.op("Gather", self.op("Shape", tensor), self.const([axis]), axis=0)


def causal_mask(g, batch, seq, total, past, window=None):
    """The older export's [B, 1, S, T] additive mask; with `window` W, also
    hiding keys at or before query position - W, as that code builds the
    sliding-window mask (`arange(T) <= cache_position.reshape(-1, 1) - W`)."""
    fill = helper.make_tensor("fill", TensorProto.FLOAT, [1], [F32_MIN])
    full = g.op("ConstantOfShape", g.op("Concat", seq, total, axis=0), value=fill)
    upper = g.op("Trilu", full, g.const(1), upper=1)
    start, total_s = g.op("Squeeze", past), g.op("Squeeze", total)
    cache_pos = g.op("Range", start, g.op("Add", start, g.op("Squeeze", seq)), g.const(1))
    later = g.op("Greater", g.op("Range", g.const(0), total_s, g.const(1)),
                 g.op("Reshape", cache_pos, g.const([-1, 1])))
    causal = g.op("Mul", upper, g.op("Cast", later, to=TensorProto.FLOAT))
    if window is not None:
        too_old = g.op("LessOrEqual", g.op("Range", g.const(0), total_s, g.const(1)),
                       g.op("Sub", g.op("Reshape", cache_pos, g.const([-1, 1])),
                            g.const(window)))
        causal = g.op("Where", too_old, g.const(F32_MIN, np.float32), causal)
    shape4 = g.op("Concat", batch, g.const([1]), seq, total, axis=0)
    causal4 = g.op("Expand", g.op("Unsqueeze", causal, g.const([0, 1])), shape4)
    keep = g.op("Cast", g.op("Unsqueeze", "attention_mask", g.const([1, 2])),
                to=TensorProto.FLOAT)
    padding = g.op("Equal", g.op("Add", causal4, keep), g.const(0.0, np.float32))
    masked = g.op("Where", padding, g.const(F32_MIN, np.float32), causal4)
    # Every [b, 0, i, j] as an index tuple, as the export builds them.
    axes = []
    for axis, size in enumerate((batch, g.const([1]), seq, total)):
        r = g.op("Range", g.const(0), g.op("Squeeze", size), g.const(1))
        shape = [1, 1, 1, 1, 1]
        shape[axis] = -1
        axes.append(g.op("Expand", g.op("Reshape", r, g.const(shape)),
                         g.op("Concat", shape4, g.const([1]), axis=0)))
    return g.op("ScatterND", causal4, g.op("Concat", *axes, axis=-1), masked)


def attention_layer(g, i, h, mask, batch, seq, softcap=None):
    """One pre-LN attention block with a KV cache; returns the new h. With
    `softcap` c, the scaled scores are c * tanh(scores / c) before the mask,
    as Gemma 2's attn_logit_softcapping."""
    x = g.op("LayerNormalization", h, g.weight(f"ln{i}.w", [HIDDEN], 0.1, 1.0),
             g.weight(f"ln{i}.b", [HIDDEN], 0.1), axis=-1, epsilon=1e-5)
    split = g.const([0, 0, HEADS, HEAD_DIM])  # [B, S, H, D]
    heads = {}
    for p in ("q", "k", "v"):
        y = g.op("Add", g.op("MatMul", x, g.weight(f"{p}{i}.w", [HIDDEN, HIDDEN])),
                 g.weight(f"{p}{i}.b", [HIDDEN], 0.1))
        heads[p] = g.op("Transpose", g.op("Reshape", y, split), perm=[0, 2, 1, 3])
    key = g.op("Concat", f"past_key_values.{i}.key", heads["k"], axis=2)
    value = g.op("Concat", f"past_key_values.{i}.value", heads["v"], axis=2)
    g.nodes.append(helper.make_node("Identity", [key], [f"present.{i}.key"]))
    g.nodes.append(helper.make_node("Identity", [value], [f"present.{i}.value"]))
    scores = g.op("Mul", g.op("MatMul", heads["q"], g.op("Transpose", key, perm=[0, 1, 3, 2])),
                  g.const(HEAD_DIM**-0.5, np.float32))
    if softcap is not None:
        cap = g.const(np.float32(softcap), np.float32)
        scores = g.op("Mul", g.op("Tanh", g.op("Div", scores, cap)), cap)
    probs = g.op("Softmax", g.op("Add", scores, mask), axis=-1)
    out = g.op("Transpose", g.op("MatMul", probs, value), perm=[0, 2, 1, 3])
    out = g.op("Reshape", out, g.op("Concat", batch, seq, g.const([HIDDEN]), axis=0))
    out = g.op("Add", g.op("MatMul", out, g.weight(f"o{i}.w", [HIDDEN, HIDDEN])),
               g.weight(f"o{i}.b", [HIDDEN], 0.1))
    return g.op("Add", h, out)


def mask_positions(g, past):
    """Positions numbered from the attention mask, as OPT's export does:
    (cumsum(mask, 1) * mask - 1)[:, past:]."""
    running = g.op("CumSum", "attention_mask", g.const(1))
    numbered = g.op("Sub", g.op("Mul", running, "attention_mask"), g.const([1]))
    return g.op("Slice", numbered, past, g.const([2**62]), g.const([1]))


def make_model(layers=2, seed=0, logits_scale=None, logits_softcap=None, window=None,
               sliding_layers=(), attn_softcap=None, positions_from_mask=False):
    """The ModelProto (opset 17, f32 weights). With `logits_scale`, the
    logits are the head's divided by it, as Granite's export computes them
    (`logits / config.logits_scaling`); with `logits_softcap` c, they are then
    soft-capped, c * tanh(logits / c), as Gemma 2's
    (`final_logit_softcapping`). With `window`, the layers in
    `sliding_layers` attend through a sliding-window mask (Gemma 2's local
    layers), the others through the causal one; `attn_softcap` soft-caps
    every layer's scores. With `positions_from_mask`, the model has no
    position_ids input and numbers its tokens from the attention mask."""
    g = Graph(np.random.default_rng(seed))
    batch, seq = g.dim("input_ids", 0), g.dim("input_ids", 1)
    total, past = g.dim("attention_mask", 1), g.dim("past_key_values.0.key", 2)
    mask = causal_mask(g, batch, seq, total, past)
    local = causal_mask(g, batch, seq, total, past, window) if window is not None else mask
    h = g.op("Add", g.op("Gather", g.weight("embed", [VOCAB, HIDDEN], 1.0), "input_ids", axis=0),
             g.op("Gather", g.weight("embed_pos", [MAX_POS, HIDDEN], 0.5),
                  mask_positions(g, past) if positions_from_mask else "position_ids", axis=0))
    for i in range(layers):
        h = attention_layer(g, i, h, local if i in sliding_layers else mask, batch, seq,
                            attn_softcap)
    h = g.op("LayerNormalization", h, g.weight("ln_f.w", [HIDDEN], 0.1, 1.0),
             g.weight("ln_f.b", [HIDDEN], 0.1), axis=-1, epsilon=1e-5)
    head = g.weight("lm_head", [HIDDEN, VOCAB])
    if logits_scale is None and logits_softcap is None:
        g.nodes.append(helper.make_node("MatMul", [h, head], ["logits"], name="/lm_head/MatMul"))
    else:
        logits = g.op("MatMul", h, head)
        if logits_scale is not None:
            logits = g.op("Div", logits, g.const(np.float32(logits_scale), np.float32))
        if logits_softcap is not None:
            cap = g.const(np.float32(logits_softcap), np.float32)
            logits = g.op("Mul", g.op("Tanh", g.op("Div", logits, cap)), cap)
        g.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/logits"))
    info = helper.make_tensor_value_info
    seq, total = "sequence_length", "past_sequence_length + sequence_length"
    inputs = [info("input_ids", TensorProto.INT64, ["batch_size", seq]),
              info("attention_mask", TensorProto.INT64, ["batch_size", total])]
    if not positions_from_mask:
        inputs.append(info("position_ids", TensorProto.INT64, ["batch_size", seq]))
    outputs = [info("logits", TensorProto.FLOAT, ["batch_size", seq, VOCAB])]
    for i in range(layers):
        for kind in ("key", "value"):
            inputs.append(info(f"past_key_values.{i}.{kind}", TensorProto.FLOAT,
                               ["batch_size", HEADS, "past_sequence_length", HEAD_DIM]))
            outputs.append(info(f"present.{i}.{kind}", TensorProto.FLOAT,
                                ["batch_size", HEADS, total, HEAD_DIM]))
    graph = helper.make_graph(g.nodes, "older_mask_decoder", inputs, outputs, g.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
