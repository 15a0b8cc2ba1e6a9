#!/usr/bin/env python3
"""Exports a weightless Llama-3-8B-shaped ONNX graph (docs/gpu.md).

usage: make_8b_graph.py [--size 8b|tiny] [--layers N] --out DIR

Developer tooling, run where torch, transformers and onnxscript are installed
(a venv of its own, e.g. .venv-export); the GPU machine only runs
tools/gpu/fill_random_weights.py on its output. The model is built on the meta
device, so no weight is ever allocated, and exported with
torch.onnx.export(dynamo=True) as tools/fixture_common.py's
export_dynamo_no_past does for the llama-dynamo fixture (sdpa attention, inputs
input_ids and attention_mask, output logits, no KV cache; kiln's ragged rewrite
adds the paged cache). The exporter's optimizer runs after the weights have
been replaced by references into external data (model.onnx_data, written by
fill_random_weights.py), so it makes the decisions it makes for a real 8B
checkpoint: no weight is folded or deduplicated. The rotary inv_freq, a
buffer computed from the config, keeps its real values in the graph.

DIR gets model.onnx.gz (the graph, gzip), weights.json (each weight's name,
dtype, shape, offset and length in model.onnx_data, and "init": "norm" for
norm weights), config.json and generation_config.json, and the demo model's
tokenizer (2048 ids, below the vocabulary), as tools/make_big_llama.py does.

--size tiny keeps the graph's form (head_dim 128, GQA) at a small size
(hidden 1280, 2 layers, vocab 4000: 92 MB of bf16), to check the path end to
end on a small machine. Its norm weights still have more than 1024 elements,
so the exporter's deduplication of small initializers leaves them alone, as
at 8B.
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
# the same form: GQA, untied lm_head, rope theta 500000.
SIZES = {
    "8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, intermediate_size=14336, vocab_size=128256,
               max_position_embeddings=8192),
    "tiny": dict(hidden_size=1280, num_hidden_layers=2, num_attention_heads=10,
                 num_key_value_heads=2, intermediate_size=3584, vocab_size=4000,
                 max_position_embeddings=8192),
}


def llama_config(size: str, layers: int | None):
    from transformers import LlamaConfig
    shape = dict(SIZES[size])
    if layers:
        shape["num_hidden_layers"] = layers
    return LlamaConfig(**shape, rms_norm_eps=1e-5, rope_theta=500000.0,
                       tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
                       initializer_range=0.02, hidden_act="silu", dtype="bfloat16")


def export(cfg, max_seq: int):
    """The unoptimized dynamo export of the meta-device model, in bf16 with
    the rotary inv_freq in f32 (as it is computed, `.float()`)."""
    import torch
    from transformers import LlamaForCausalLM

    class NoPast(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.model = m

        def forward(self, input_ids, attention_mask):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              use_cache=False, return_dict=False)[0]

    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("meta"):
            model = LlamaForCausalLM(cfg).eval()
    finally:
        torch.set_default_dtype(old)
    model.set_attn_implementation("sdpa")
    ids = torch.arange(3, 10, dtype=torch.int64, device="meta")[None, :]
    am = torch.ones_like(ids)
    batch = torch.export.Dim("batch", min=1, max=64)
    seq = torch.export.Dim("sequence", min=1, max=max_seq)
    with torch.no_grad():
        prog = torch.onnx.export(
            NoPast(model).eval(), (ids, am), dynamo=True, opset_version=18,
            input_names=["input_ids", "attention_mask"], output_names=["logits"],
            dynamic_shapes={"input_ids": {0: batch, 1: seq},
                            "attention_mask": {0: batch, 1: seq}},
            optimize=False, verbose=False)
    return prog.model


def real_buffers(cfg) -> dict:
    """The model's buffers with their values (the rotary inv_freq), computed on
    the CPU from the config alone."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    rot = LlamaRotaryEmbedding(config=cfg)
    return {f"model.model.rotary_emb.{n}": b.float().numpy() for n, b in rot.named_buffers()}


def externalize(model, cfg, base_dir: Path) -> None:
    """Every parameter becomes a reference into DATA (which does not exist:
    reading one is an error, so nothing folds a weight by accident); buffers
    get their real values."""
    import numpy as np
    import onnx_ir as ir
    buffers = real_buffers(cfg)
    offset = 0
    for v in list(model.graph.initializers.values()):
        if v.name in buffers:
            v.const_value = ir.tensor(np.ascontiguousarray(buffers[v.name]), name=v.name)
            continue
        length = v.const_value.nbytes
        v.const_value = ir.ExternalTensor(DATA, offset, length, v.dtype, shape=v.shape, name=v.name,
                                          base_dir=str(base_dir))
        offset += (length + ALIGN - 1) // ALIGN * ALIGN


def fold_weight_transposes(model, base_dir: Path) -> int:
    """Transpose(weight) -> the transposed weight, what the exporter's constant
    folding does with real weights (it always folds a Transpose that is its
    input's only consumer, whatever the size); with no data here it would only
    fail to. The folded weight is named after the Transpose's output, as the
    folder names it."""
    import onnx_ir as ir
    graph, n = model.graph, 0
    for node in list(graph):
        if node.op_type != "Transpose" or node.domain not in ("", "ai.onnx"):
            continue
        w = node.inputs[0]
        if not isinstance(w.const_value, ir.ExternalTensor) or len(w.consumers()) != 1:
            continue
        perm = node.attributes["perm"].as_ints()
        shape = ir.Shape([w.shape[p] for p in perm])
        out = node.outputs[0]
        folded = ir.Value(name=out.name, shape=shape, type=ir.TensorType(w.dtype),
                          const_value=ir.ExternalTensor(DATA, 0, w.const_value.nbytes, w.dtype,
                                                        shape=shape, name=out.name,
                                                        base_dir=str(base_dir)))
        out.replace_all_uses_with(folded)
        graph.remove(node, safe=True)
        del graph.initializers[w.name]
        out.name = None
        graph.register_initializer(folded)
        n += 1
    return n


def optimize(model) -> None:
    """torch.onnx's own optimization for torch 2.8+ (onnxscript's optimizer and
    fusions), the step optimize=True would have run."""
    from onnxscript._framework_apis.torch_2_8 import optimize as torch_optimize
    torch_optimize(model)


def finish(path: Path, out: Path) -> list:
    """Strips node metadata, names the weights as the checkpoint does, lays
    them out in DATA in graph order (aligned), and writes weights.json."""
    import onnx
    m = onnx.load(str(path), load_external_data=False)
    for n in m.graph.node:
        del n.metadata_props[:]
    entries, offset = [], 0
    width = {onnx.TensorProto.BFLOAT16: ("bf16", 2), onnx.TensorProto.FLOAT: ("f32", 4),
             onnx.TensorProto.FLOAT16: ("f16", 2)}
    renames = {}
    for t in m.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        dtype, w = width[t.data_type]
        length = w
        for d in t.dims:
            length *= d
        if t.name.startswith("model.model.") or t.name.startswith("model.lm_head"):
            renames[t.name] = t.name[len("model."):]
            t.name = renames[t.name]
        del t.external_data[:]
        for k, v in (("location", DATA), ("offset", str(offset)), ("length", str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        entries.append({"name": t.name, "dtype": dtype, "shape": list(t.dims),
                        "offset": offset, "length": length,
                        **({"init": "norm"} if "norm" in t.name else {})})
        offset += (length + ALIGN - 1) // ALIGN * ALIGN
    for n in m.graph.node:
        for i, name in enumerate(n.input):
            if name in renames:
                n.input[i] = renames[name]
    with gzip.open(out / "model.onnx.gz", "wb", compresslevel=9) as f:
        f.write(m.SerializeToString())
    total = entries[-1]["offset"] + entries[-1]["length"] if entries else 0
    (out / "weights.json").write_text(json.dumps(
        {"location": DATA, "total_bytes": total, "tensors": entries}, indent=1) + "\n")
    return entries


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="8b")
    ap.add_argument("--layers", type=int, help="decoder layers (default: the size's)")
    ap.add_argument("--max-seq", type=int, default=8192)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()

    import onnx_ir as ir
    out = a.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    cfg = llama_config(a.size, a.layers)
    t0 = time.time()
    model = export(cfg, a.max_seq)
    print(f"  export: {time.time() - t0:.0f} s", flush=True)
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    externalize(model, cfg, work)
    print(f"  {fold_weight_transposes(model, work)} weight transposes folded", flush=True)
    optimize(model)
    print(f"  optimize: {time.time() - t0:.0f} s", flush=True)
    ir.save(model, str(work / "model.onnx"))
    entries = finish(work / "model.onnx", out)
    shutil.rmtree(work)
    cfg.save_pretrained(str(out))
    gen = {"bos_token_id": 1, "eos_token_id": 2, "max_length": a.max_seq, "do_sample": False}
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(DEMO / name, out / name)
    total = sum(e["length"] for e in entries)
    print(f"wrote {out}: {len(entries)} weights, {total / 1e9:.2f} GB of external data to fill, "
          f"graph {(out / 'model.onnx.gz').stat().st_size / 1e6:.2f} MB gzip")
    return 0


if __name__ == "__main__":
    sys.exit(main())
