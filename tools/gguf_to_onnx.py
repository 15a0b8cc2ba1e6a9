#!/usr/bin/env python3
"""Writes a Llama-architecture GGUF checkpoint as an ONNX decoder graph, without torch.

    python tools/gguf_to_onnx.py MODEL.gguf OUT_DIR [--layers N]

The `gguf` package reads and dequantizes the weights (F32, F16, Q8_0, Q4_0,
Q4_1, K-quants: whatever gguf.quants handles) with numpy alone; this script then
writes the graph that Optimum's text-generation-with-past export of
transformers' LlamaForCausalLM has, node for node in the forms that matter:

  inputs   input_ids [B, S], attention_mask [B, P+S], position_ids [B, S],
           past_key_values.N.key / .value [B, Hkv, P, D]
  outputs  logits [B, S, V], present.N.key / .value [B, Hkv, P+S, D]

RMSNorm as x * 1/sqrt(mean(x^2) + eps) * w, rotary as x*cos + rotate_half(x)*sin
with cos/sin from position_ids and the model's inv_freq, the KV cache
concatenated on the sequence axis, the GQA repeat as Unsqueeze/Expand/Reshape,
softmax(q k^T * scale + mask) v with a causal and padding mask built from
attention_mask, SwiGLU MLP, and an LM head over the (tied, copied) embedding.
Node names carry /model/layers.N/ as the exporter's do, so kiln's report groups
them by layer.

llama.cpp stores the q and k projections of Llama models with the rows of
each head interleaved for its rotary layout; they are permuted back to
transformers' rotate_half layout here (as transformers does when it loads a
GGUF file). --layers keeps the first N layers (for quick checks against
transformers on a trimmed checkpoint).

Writes OUT_DIR/model.onnx with its weights in OUT_DIR/model.onnx.data.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 18


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    value = f.contents()
    return value


def unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's q/k row order (pairs interleaved per head) back to transformers'."""
    # llama.cpp wrote row h*D + 2j + half from transformers' row h*D + half*D/2 + j.
    rows = w.shape[0]
    return w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def read_llama_gguf(path: Path, layers: int | None = None):
    """The model's hyper-parameters and its weights by transformers' names, fp32."""
    from gguf import GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(str(path))
    arch = field(reader, "general.architecture")
    if arch != "llama":
        raise SystemExit(f"{path}: architecture {arch!r}; this converter handles llama only")
    cfg = {
        "layers": int(field(reader, "llama.block_count")),
        "hidden": int(field(reader, "llama.embedding_length")),
        "intermediate": int(field(reader, "llama.feed_forward_length")),
        "heads": int(field(reader, "llama.attention.head_count")),
        "kv_heads": int(field(reader, "llama.attention.head_count_kv",
                              field(reader, "llama.attention.head_count"))),
        "eps": float(field(reader, "llama.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(field(reader, "llama.rope.freq_base", 10000.0)),
        "context": int(field(reader, "llama.context_length")),
    }
    if field(reader, "llama.rope.scaling.type") not in (None, "none"):
        raise SystemExit(f"{path}: rope scaling is not handled by this converter")
    if layers is not None:
        cfg["layers"] = min(layers, cfg["layers"])
    cfg["head_dim"] = cfg["hidden"] // cfg["heads"]
    raw = {}
    for t in reader.tensors:
        if t.name.startswith("blk."):
            index = int(t.name.split(".")[1])
            if index >= cfg["layers"]:
                continue
        raw[t.name] = np.ascontiguousarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
    w = {"embed": raw["token_embd.weight"], "norm": raw["output_norm.weight"]}
    # Tied embeddings: no output.weight in the file.
    w["lm_head"] = raw.get("output.weight", w["embed"])
    cfg["vocab"] = w["embed"].shape[0]
    for i in range(cfg["layers"]):
        b = f"blk.{i}."
        w[f"{i}.in_norm"] = raw[b + "attn_norm.weight"]
        w[f"{i}.post_norm"] = raw[b + "ffn_norm.weight"]
        w[f"{i}.q"] = unpermute(raw[b + "attn_q.weight"], cfg["heads"])
        w[f"{i}.k"] = unpermute(raw[b + "attn_k.weight"], cfg["kv_heads"])
        w[f"{i}.v"] = raw[b + "attn_v.weight"]
        w[f"{i}.o"] = raw[b + "attn_output.weight"]
        w[f"{i}.gate"] = raw[b + "ffn_gate.weight"]
        w[f"{i}.up"] = raw[b + "ffn_up.weight"]
        w[f"{i}.down"] = raw[b + "ffn_down.weight"]
    return cfg, w


class GraphBuilder:
    """Nodes, initializers and scalar/vector constants, named as the exporter names them."""

    def __init__(self):
        self.nodes, self.inits, self.counter = [], [], {}

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def const(self, scope, array):
        """A Constant node, as the exporter writes small values (not an initializer)."""
        name = self.unique(scope, "Constant")
        out = name + "_output_0"
        self.nodes.append(helper.make_node(
            "Constant", [], [out], name=name, value=numpy_helper.from_array(np.asarray(array))))
        return out

    def unique(self, scope, op):
        key = (scope, op)
        n = self.counter.get(key, 0)
        self.counter[key] = n + 1
        return f"{scope}/{op}" + (f"_{n}" if n else "")

    def op(self, scope, op, inputs, **attrs):
        name = self.unique(scope, op)
        out = name + "_output_0"
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=name, **attrs))
        return out


def rms_norm(g, scope, x, weight, eps):
    sq = g.op(scope, "Pow", [x, g.const(scope, np.float32(2.0))])
    mean = g.op(scope, "ReduceMean", [sq, g.const(scope, np.array([-1], np.int64))], keepdims=1)
    std = g.op(scope, "Sqrt", [g.op(scope, "Add", [mean, g.const(scope, np.float32(eps))])])
    inv = g.op(scope, "Div", [g.const(scope, np.float32(1.0)), std])
    return g.op(scope, "Mul", [weight, g.op(scope, "Mul", [x, inv])])


def linear(g, scope, x, weight_name):
    return g.op(scope, "MatMul", [x, weight_name])


def heads_first(g, scope, x, heads, head_dim):
    """[B, S, heads*head_dim] -> [B, heads, S, head_dim]."""
    shaped = g.op(scope, "Reshape", [x, g.const(scope, np.array([0, 0, heads, head_dim], np.int64))])
    return g.op(scope, "Transpose", [shaped], perm=[0, 2, 1, 3])


def rotary(g, scope, x, cos, sin, head_dim):
    half = head_dim // 2
    axis = g.const(scope, np.array([-1], np.int64))
    x1 = g.op(scope, "Slice", [x, g.const(scope, np.array([0], np.int64)),
                               g.const(scope, np.array([half], np.int64)), axis])
    x2 = g.op(scope, "Slice", [x, g.const(scope, np.array([half], np.int64)),
                               g.const(scope, np.array([np.iinfo(np.int64).max], np.int64)), axis])
    rotated = g.op(scope, "Concat", [g.op(scope, "Neg", [x2]), x1], axis=-1)
    return g.op(scope, "Add", [g.op(scope, "Mul", [x, cos]), g.op(scope, "Mul", [rotated, sin])])


def repeat_kv(g, scope, kv, n_rep):
    """transformers' repeat_kv: [B, Hkv, T, D] -> [B, Hkv*n_rep, T, D]."""
    if n_rep == 1:
        return kv
    shape = g.op(scope, "Shape", [kv])
    dims = [g.op(scope, "Gather", [shape, g.const(scope, np.array([d], np.int64))], axis=0)
            for d in range(4)]
    rep = g.const(scope, np.array([n_rep], np.int64))
    expand_shape = g.op(scope, "Concat", [dims[0], dims[1], rep, dims[2], dims[3]], axis=0)
    heads = g.op(scope, "Mul", [dims[1], rep])
    out_shape = g.op(scope, "Concat", [dims[0], heads, dims[2], dims[3]], axis=0)
    unsq = g.op(scope, "Unsqueeze", [kv, g.const(scope, np.array([2], np.int64))])
    expanded = g.op(scope, "Expand", [unsq, expand_shape])
    return g.op(scope, "Reshape", [expanded, out_shape])


def build_graph(cfg, w):
    g = GraphBuilder()
    H, Hq, Hkv, D = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    V, L = cfg["vocab"], cfg["layers"]
    g.init("model.embed_tokens.weight", w["embed"])
    g.init("model.norm.weight", w["norm"])
    g.init("lm_head.weight.T", np.ascontiguousarray(w["lm_head"].T))
    m = "/model"
    h = g.op(m + "/embed_tokens", "Gather", ["model.embed_tokens.weight", "input_ids"])

    # cos and sin of each position: [B, 1, S, D].
    inv_freq = 1.0 / (cfg["rope_theta"] ** (np.arange(0, D, 2, dtype=np.int64).astype(np.float32) / D))
    r = m + "/rotary_emb"
    pos = g.op(r, "Unsqueeze", [g.op(r, "Cast", ["position_ids"], to=TensorProto.FLOAT),
                                g.const(r, np.array([-1], np.int64))])
    freqs = g.op(r, "Mul", [pos, g.const(r, inv_freq.astype(np.float32))])
    emb = g.op(r, "Concat", [freqs, freqs], axis=-1)
    head_axis = g.const(r, np.array([1], np.int64))
    cos = g.op(r, "Unsqueeze", [g.op(r, "Cos", [emb]), head_axis])
    sin = g.op(r, "Unsqueeze", [g.op(r, "Sin", [emb]), head_axis])

    # The mask: key t is visible to query s when t <= past + s and attention_mask[t] is 1.
    k = m + "/mask"
    zero, one = g.const(k, np.array(0, np.int64)), g.const(k, np.array(1, np.int64))
    seq = g.op(k, "Gather", [g.op(k, "Shape", ["input_ids"]), one], axis=0)
    total = g.op(k, "Gather", [g.op(k, "Shape", ["attention_mask"]), one], axis=0)
    past = g.op(k, "Sub", [total, seq])
    q_pos = g.op(k, "Add", [g.op(k, "Range", [zero, seq, one]), past])
    k_pos = g.op(k, "Range", [zero, total, one])
    causal = g.op(k, "LessOrEqual", [
        g.op(k, "Unsqueeze", [k_pos, g.const(k, np.array([0], np.int64))]),
        g.op(k, "Unsqueeze", [q_pos, g.const(k, np.array([1], np.int64))])])
    padding = g.op(k, "Cast", [g.op(k, "Unsqueeze", ["attention_mask",
                                                     g.const(k, np.array([1, 2], np.int64))])],
                   to=TensorProto.BOOL)
    allowed = g.op(k, "And", [g.op(k, "Unsqueeze", [causal, g.const(k, np.array([0, 1], np.int64))]),
                              padding])
    mask = g.op(k, "Where", [allowed, g.const(k, np.float32(0.0)),
                             g.const(k, np.float32(-np.inf))])

    scale = np.float32(1.0 / np.sqrt(D))
    for i in range(L):
        s = f"{m}/layers.{i}"
        names = {}
        for part in ("q", "k", "v", "o", "gate", "up", "down"):
            names[part] = g.init(f"model.layers.{i}.{part}.weight.T",
                                 np.ascontiguousarray(w[f"{i}.{part}"].T))
        in_norm = g.init(f"model.layers.{i}.input_layernorm.weight", w[f"{i}.in_norm"])
        post_norm = g.init(f"model.layers.{i}.post_attention_layernorm.weight",
                           w[f"{i}.post_norm"])

        a = s + "/self_attn"
        x = rms_norm(g, s + "/input_layernorm", h, in_norm, cfg["eps"])
        q = heads_first(g, a, linear(g, a + "/q_proj", x, names["q"]), Hq, D)
        kk = heads_first(g, a, linear(g, a + "/k_proj", x, names["k"]), Hkv, D)
        v = heads_first(g, a, linear(g, a + "/v_proj", x, names["v"]), Hkv, D)
        q = rotary(g, a, q, cos, sin, D)
        kk = rotary(g, a, kk, cos, sin, D)
        present_k = g.op(a, "Concat", [f"past_key_values.{i}.key", kk], axis=2)
        present_v = g.op(a, "Concat", [f"past_key_values.{i}.value", v], axis=2)
        g.nodes.append(helper.make_node("Identity", [present_k], [f"present.{i}.key"],
                                        name=a + "/present_key"))
        g.nodes.append(helper.make_node("Identity", [present_v], [f"present.{i}.value"],
                                        name=a + "/present_value"))
        k_all = repeat_kv(g, a, present_k, Hq // Hkv)
        v_all = repeat_kv(g, a, present_v, Hq // Hkv)
        scores = g.op(a, "MatMul", [q, g.op(a, "Transpose", [k_all], perm=[0, 1, 3, 2])])
        scores = g.op(a, "Add", [g.op(a, "Mul", [scores, g.const(a, scale)]), mask])
        probs = g.op(a, "Softmax", [scores], axis=-1)
        ctx = g.op(a, "Transpose", [g.op(a, "MatMul", [probs, v_all])], perm=[0, 2, 1, 3])
        ctx = g.op(a, "Reshape", [ctx, g.const(a, np.array([0, 0, Hq * D], np.int64))])
        h = g.op(s, "Add", [h, linear(g, a + "/o_proj", ctx, names["o"])])

        p = s + "/mlp"
        x = rms_norm(g, s + "/post_attention_layernorm", h, post_norm, cfg["eps"])
        gate = linear(g, p + "/gate_proj", x, names["gate"])
        act = g.op(p + "/act_fn", "Mul", [gate, g.op(p + "/act_fn", "Sigmoid", [gate])])
        up = linear(g, p + "/up_proj", x, names["up"])
        h = g.op(s, "Add", [h, linear(g, p + "/down_proj", g.op(p, "Mul", [act, up]), names["down"])])

    x = rms_norm(g, m + "/norm", h, "model.norm.weight", cfg["eps"])
    g.nodes.append(helper.make_node("MatMul", [x, "lm_head.weight.T"], ["logits"],
                                    name="/lm_head/MatMul"))

    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    inputs = [helper.make_tensor_value_info("input_ids", i64, ["batch_size", "sequence_length"]),
              helper.make_tensor_value_info("attention_mask", i64,
                                            ["batch_size", "past_sequence_length + sequence_length"]),
              helper.make_tensor_value_info("position_ids", i64, ["batch_size", "sequence_length"])]
    outputs = [helper.make_tensor_value_info("logits", f32,
                                             ["batch_size", "sequence_length", V])]
    for i in range(L):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(
                f"past_key_values.{i}.{kind}", f32,
                ["batch_size", Hkv, "past_sequence_length", D]))
            outputs.append(helper.make_tensor_value_info(
                f"present.{i}.{kind}", f32,
                ["batch_size", Hkv, "past_sequence_length + sequence_length", D]))
    graph = helper.make_graph(g.nodes, "main_graph", inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="kiln tools/gguf_to_onnx.py")
    model.ir_version = 8
    return model


def convert(gguf_path: Path, out_dir: Path, layers: int | None = None) -> dict:
    cfg, weights = read_llama_gguf(gguf_path, layers)
    model = build_graph(cfg, weights)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = out_dir / "model.onnx.data"
    if data.exists():
        data.unlink()
    onnx.save_model(model, str(out_dir / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=1024)
    return cfg


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gguf", type=Path)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--layers", type=int, help="keep only the first N layers")
    args = ap.parse_args(argv)
    cfg = convert(args.gguf, args.out_dir, args.layers)
    print(f"{args.out_dir}/model.onnx: llama, {cfg['layers']} layers, hidden {cfg['hidden']}, "
          f"{cfg['heads']}/{cfg['kv_heads']} heads, vocab {cfg['vocab']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
