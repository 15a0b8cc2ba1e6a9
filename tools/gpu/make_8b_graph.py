#!/usr/bin/env python3
"""Exports a weightless Llama-3-8B-shaped ONNX graph (docs/gpu.md).

usage: make_8b_graph.py [--size 8b|tiny|mixtral|mixtral-tiny] [--layers N] --out DIR

Developer tooling, run where torch and transformers are installed (a venv of
its own, e.g. .venv-export); the GPU machine only runs
tools/gpu/fill_random_weights.py on its output.

The graph has the interface of an Optimum `text-generation-with-past` export
(the llama-optimum fixture's): inputs input_ids, attention_mask, position_ids
and past_key_values.N.key/value, outputs logits and present.N.key/value, so
kiln injects it and gives it the ragged, paged-KV interface. It comes from
torch.onnx.export's TorchScript exporter, as Optimum's does, around a wrapper
that feeds the past tensors through a DynamicCache, eager attention.

No weight is ever stored: every parameter is a zero-strided view of one
number (the export runs the model once, on a 3-token input, so it needs tensors with
data, but not their memory), and export_params=False makes the parameters
graph inputs, which this script turns into initializers pointing into external
data (model.onnx_data) that does not exist yet. The rotary inv_freq, computed
from the config, keeps its real values.

DIR gets model.onnx.gz (the graph, gzip), weights.json (each weight's name,
dtype, shape, offset and length in model.onnx_data, and "init": "norm" for
norm weights), config.json, generation_config.json and the demo model's
tokenizer (2048 ids, below the vocabulary), as tools/make_big_llama.py does.

--size tiny is the same form (head_dim 128, GQA, untied lm_head) at a small
size (hidden 1280, 2 layers, vocab 4000: 92 MB of bf16), to check the path
end to end on a small machine.

--size mixtral is Mixtral-8x7B's layer (mistralai/Mixtral-8x7B-v0.1's
config.json: hidden 4096, 32 query / 8 KV heads, 8 experts of intermediate
14336, top 2, vocab 32000, rope theta 1e6) with 5 layers by default (7.5 B
parameters, 15 GB of bf16: an 8B-class MoE that one GPU holds);
mixtral-tiny the same form at hidden 1280. Its sparse MoE block is exported
looping over every expert (tools/fixture_models.py trace_every_expert, as the
mixtral-optimum fixture), so kiln fuses each layer's into one moe op.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
DEMO = REPO / "test" / "fixtures" / "demo"
DATA = "model.onnx_data"
ALIGN = 4096

# Llama-3-8B (meta-llama/Meta-Llama-3-8B's config.json), and a small model of
# the same form.
SIZES = {
    "8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, intermediate_size=14336, vocab_size=128256,
               max_position_embeddings=8192),
    "tiny": dict(hidden_size=1280, num_hidden_layers=2, num_attention_heads=10,
                 num_key_value_heads=2, intermediate_size=3584, vocab_size=4000,
                 max_position_embeddings=8192),
    "mixtral": dict(hidden_size=4096, num_hidden_layers=5, num_attention_heads=32,
                    num_key_value_heads=8, intermediate_size=14336, vocab_size=32000,
                    max_position_embeddings=8192, num_local_experts=8,
                    num_experts_per_tok=2),
    "mixtral-tiny": dict(hidden_size=1280, num_hidden_layers=2, num_attention_heads=10,
                         num_key_value_heads=2, intermediate_size=1792, vocab_size=4000,
                         max_position_embeddings=8192, num_local_experts=8,
                         num_experts_per_tok=2),
}


def model_config(size: str, layers: int | None):
    shape = dict(SIZES[size])
    if layers:
        shape["num_hidden_layers"] = layers
    common = dict(tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
                  initializer_range=0.02, hidden_act="silu", dtype="float32")
    if size.startswith("mixtral"):
        from transformers import MixtralConfig
        return MixtralConfig(**shape, **common, rms_norm_eps=1e-5, rope_theta=1e6,
                             sliding_window=None, router_jitter_noise=0.0)
    from transformers import LlamaConfig
    return LlamaConfig(**shape, **common, rms_norm_eps=1e-5, rope_theta=500000.0)


def weightless_model(cfg):
    """The config's causal LM whose parameters are zero-strided views of one
    number each (no memory), with a real rotary embedding (inv_freq in f32)."""
    import torch
    if cfg.model_type == "mixtral":
        sys.path.insert(0, str(REPO / "tools"))
        from fixture_models import trace_every_expert
        from transformers import MixtralForCausalLM as Model
        from transformers.models.mixtral.modeling_mixtral import MixtralRotaryEmbedding as Rotary
        trace_every_expert()
    else:
        from transformers import LlamaForCausalLM as Model
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding as Rotary

    with torch.device("meta"):
        model = Model(cfg).eval()
    # The exporter merges parameters of equal value, so the parameters of
    # each shape get distinct constants: 1, 2, 3, ... (exact in f32; at most
    # 65 share a shape in the Llama shapes, 80 in Mixtral's 5 layers).
    count = {}
    for mod in model.modules():
        for name, p in list(mod._parameters.items()):
            if p is not None:
                k = count[tuple(p.shape)] = count.get(tuple(p.shape), 0) + 1
                view = torch.full((), float(k), dtype=p.dtype).expand(p.shape)
                mod._parameters[name] = torch.nn.Parameter(view, requires_grad=False)
    model.model.rotary_emb = Rotary(config=cfg)
    model.set_attn_implementation("sdpa")
    return model


def untraceable_masks():
    """transformers 4.53+ builds attention masks with vmap, which the
    TorchScript exporter cannot trace: Optimum's export registers mask
    functions without it, and so does this one, with Optimum's (where
    optimum-onnx is installed; older transformers need none)."""
    try:
        from optimum.exporters.onnx import model_patcher as mp
        from transformers import masking_utils
    except ImportError:
        return
    masking_utils.ALL_MASK_ATTENTION_FUNCTIONS.register("sdpa", mp.sdpa_mask_without_vmap)
    masking_utils.ALL_MASK_ATTENTION_FUNCTIONS.register("eager", mp.eager_mask_without_vmap)
    if hasattr(mp, "find_packed_sequence_indices_patched"):
        masking_utils.find_packed_sequence_indices = mp.find_packed_sequence_indices_patched


def export(cfg, path: Path) -> list:
    """TorchScript export with past/present KV, parameters as graph inputs;
    returns the names of the model's own inputs."""
    import torch
    from transformers.cache_utils import DynamicCache

    layers = cfg.num_hidden_layers
    kv_heads = cfg.num_key_value_heads
    head_dim = cfg.hidden_size // cfg.num_attention_heads

    class WithPast(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.model = m

        def forward(self, input_ids, attention_mask, position_ids, *past):
            cache = DynamicCache(config=cfg)
            for i in range(layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                             position_ids=position_ids, past_key_values=cache, use_cache=True,
                             return_dict=True)
            present = []
            for layer in out.past_key_values.layers:
                present += [layer.keys, layer.values]
            return (out.logits, *present)

    model = weightless_model(cfg)
    untraceable_masks()
    past_len, new_len = 4, 3
    ids = torch.full((1, new_len), 5, dtype=torch.int64)
    mask = torch.ones(1, past_len + new_len, dtype=torch.int64)
    pos = torch.arange(past_len, past_len + new_len)[None]
    past = [torch.zeros(1, kv_heads, past_len, head_dim, dtype=torch.float32)
            for _ in range(2 * layers)]
    kv = [f"{i}.{k}" for i in range(layers) for k in ("key", "value")]
    inputs = ["input_ids", "attention_mask", "position_ids"] + [f"past_key_values.{n}" for n in kv]
    outputs = ["logits"] + [f"present.{n}" for n in kv]
    axes = {"input_ids": {0: "batch_size", 1: "sequence_length"},
            "attention_mask": {0: "batch_size", 1: "past_sequence_length + sequence_length"},
            "position_ids": {0: "batch_size", 1: "sequence_length"},
            "logits": {0: "batch_size", 1: "sequence_length"}}
    for n in kv:
        axes[f"past_key_values.{n}"] = {0: "batch_size", 2: "past_sequence_length"}
        axes[f"present.{n}"] = {0: "batch_size", 2: "past_sequence_length + sequence_length"}
    with torch.no_grad():
        torch.onnx.export(WithPast(model).eval(), (ids, mask, pos, *past), str(path),
                          dynamo=False, export_params=False, opset_version=18,
                          input_names=inputs, output_names=outputs, dynamic_axes=axes,
                          do_constant_folding=True)
    return inputs


def externalize(path: Path, model_inputs: list, out: Path) -> list:
    """The parameter inputs become initializers in DATA, laid out in graph
    order (aligned); writes model.onnx.gz and weights.json."""
    import onnx
    m = onnx.load(str(path))
    kinds = {onnx.TensorProto.BFLOAT16: ("bf16", 2), onnx.TensorProto.FLOAT: ("f32", 4),
             onnx.TensorProto.FLOAT16: ("f16", 2)}
    keep, entries, offset = [], [], 0
    for i in m.graph.input:
        if i.name in model_inputs:
            keep.append(i)
            continue
        t = i.type.tensor_type
        dims = [d.dim_value for d in t.shape.dim]
        if any(d <= 0 for d in dims) or t.elem_type not in kinds:
            raise SystemExit(f"error: parameter input {i.name} has no static float shape")
        dtype, width = kinds[t.elem_type]
        length = width
        for d in dims:
            length *= d
        init = m.graph.initializer.add()
        init.name, init.data_type = i.name, t.elem_type
        init.dims.extend(dims)
        init.data_location = onnx.TensorProto.EXTERNAL
        for k, v in (("location", DATA), ("offset", str(offset)), ("length", str(length))):
            e = init.external_data.add()
            e.key, e.value = k, v
        entries.append({"name": i.name, "dtype": dtype, "shape": dims, "offset": offset,
                        "length": length, **({"init": "norm"} if "norm" in i.name else {})})
        offset += (length + ALIGN - 1) // ALIGN * ALIGN
    del m.graph.input[:]
    m.graph.input.extend(keep)
    for n in m.graph.node:
        n.doc_string = ""
    with gzip.open(out / "model.onnx.gz", "wb", compresslevel=9) as f:
        f.write(m.SerializeToString())
    total = entries[-1]["offset"] + entries[-1]["length"]
    (out / "weights.json").write_text(json.dumps(
        {"location": DATA, "total_bytes": total, "tensors": entries}, indent=1) + "\n")
    return entries


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="8b")
    ap.add_argument("--layers", type=int, help="decoder layers (default: the size's)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()

    out = a.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    cfg = model_config(a.size, a.layers)
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    t0 = time.time()
    inputs = export(cfg, work / "model.onnx")
    print(f"  export: {time.time() - t0:.0f} s", flush=True)
    entries = externalize(work / "model.onnx", inputs, out)
    shutil.rmtree(work)
    cfg.save_pretrained(str(out))
    gen = {"bos_token_id": 1, "eos_token_id": 2, "max_length": cfg.max_position_embeddings,
           "do_sample": False}
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(DEMO / name, out / name)
    total = sum(e["length"] for e in entries)
    print(f"wrote {out}: {len(entries)} weights, {total / 1e9:.2f} GB of external data to fill, "
          f"graph {(out / 'model.onnx.gz').stat().st_size / 1e6:.2f} MB gzip")
    return 0


if __name__ == "__main__":
    sys.exit(main())
