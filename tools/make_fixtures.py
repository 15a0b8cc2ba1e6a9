#!/usr/bin/env python3
"""Regenerates the small random-weight test models under test/fixtures/.

Run by developers, not by CI (CI only reads the committed fixtures):

    /path/to/venv/bin/python tools/make_fixtures.py [--only gpt2-optimum,...] [--out test/fixtures]

Requirements: tools/requirements-dev.txt (torch, transformers, optimum[onnx] /
optimum-onnx, onnxruntime, tokenizers, onnx, numpy) and the Debian package
python3.11-doc, whose HTML documentation (PSF License Agreement) is the text the
byte-level BPE tokenizers are trained on. See tools/fixture_common.py.

Fixtures (all tiny, random weights, 2 layers, hidden 64, fp32, model.onnx < 1 MB):

    gpt2-optimum, gpt2-torch        GPT-2 (learned positions, LayerNorm, GELU-tanh)
    llama-optimum, llama-torch      Llama (RoPE, RMSNorm, SwiGLU, GQA 4/2 heads)
    llama-torch14                   the same Llama, TorchScript exporter at opset 14
    llama-dynamo                    the same Llama, torch.onnx.export(dynamo=True), opset 18
    mistral-optimum                 Mistral (GQA 4/2, sliding_window 4096 > any length used)
    qwen2-optimum                   Qwen2 (GQA 4/2, q/k/v projections with bias)
    phi3-optimum                    Phi-3 (fused qkv_proj and gate_up_proj, full rotary)
    phi3-3heads-optimum             the same with 3 heads (hidden 48), for uneven TP splits
    gptneox-optimum                 GPT-NeoX (rotary_pct 0.25: partial rotary, parallel
                                    residual, GELU (erf), biases everywhere)
    opt-optimum                     OPT (learned positions with offset 2, pre-LN, ReLU)
    gemma-optimum                   Gemma (GeGLU with gelu_pytorch_tanh, embeddings scaled
                                    by sqrt(hidden), RMSNorm with (1 + w), MQA,
                                    lm_head untied)
    bert-optimum                    BERT encoder (post-LN, GELU (erf), token types);
                                    task feature-extraction, output last_hidden_state
    gemma2-optimum                  Gemma 2 (window 12 on layer 0, soft-capped attention
                                    and final logits, head_dim 24)
    gemma3-optimum                  Gemma 3 text (window 10 on layer 0, a rope base per
                                    layer type, q/k norms, hidden 48)
    mistral-window-optimum          Mistral with sliding_window 12 on every layer
    granite-optimum                 Granite (embedding, attention, residual and logit
                                    multipliers)
    olmo2-optimum                   OLMo 2 (post-norms, q/k norms over the projection)
    falcon-optimum                  Falcon 7B layout (MQA, parallel attention/MLP)
    stablelm-optimum                StableLM (LayerNorm, partial rotary, q/k/v biases)
    phi2-optimum                    Phi-2 (parallel attention/MLP, partial rotary, biases)
    qwen3-moe-optimum               Qwen3-MoE (8 experts, top 2 renormalized)
    mixtral-optimum                 Mixtral (4 experts, top 2), Optimum with Mistral's
                                    ONNX config (Optimum has none for Mixtral)
    qwen2-moe-optimum               Qwen2-MoE (6 experts, top 3, a gated shared expert),
                                    Optimum with Qwen2's ONNX config
    mixtral-softmax-after-optimum   Mixtral routed softmax-after-top-k (Mistral's
                                    reference code), 3 experts
    starcoder2-optimum              Starcoder2 (LayerNorm, biases, GELU MLP, GQA),
                                    Optimum with Qwen2's ONNX config
    qwen3-optimum                   Qwen3 (GQA 4/2, head_dim 16, per-head q_norm/k_norm
                                    RMSNorm before rotary)

Unit variants (*-unit): the model as transformers initializes it, with every
norm weight exactly 1 and every bias exactly 0 (how many real checkpoints start,
and what kiln's cleanup folds away: x * 1, x + 0). Each shares the tokenizer of
its sibling fixture (copied from the committed tokenizer.json, so no text source
is needed):

    llama-optimum-unit, mistral-optimum-unit, qwen2-optimum-unit,
    qwen3-optimum-unit, phi3-optimum-unit
    gpt2-torch14-unit               GPT-2 from TorchScript at opset 14, where
                                    LayerNorm is decomposed (no LayerNormalization)
    bert-optimum-unit               BERT with zero LayerNorm biases

For each it writes test/fixtures/<name>/:

    model.onnx          fp32, weights inline, default ONNX domain only
    tokenizer.json      HF `tokenizers` byte-level BPE (+ tokenizer_config.json)
    config.json         the HF config of the model (bos/eos ids included)
    generation_config.json  (causal LMs)
    reference.npz       ONNX Runtime outputs (CPU EP, fp32); reference.json says
    reference.json      what every array is, how inputs were filled, the ONNX
                        inputs/outputs, opset and op types
    prefill7/           input_<onnx name>.pb / output_<onnx name>.pb TensorProtos
                        of the length-7 prefill (BERT: length-7 encoding), for
                        `kiln exec`

The *-optimum causal LMs come from Optimum (task text-generation-with-past,
without post-processing, so a single graph with past_key_values inputs and no If
node); bert-optimum from Optimum with task feature-extraction (no KV cache, no
generation: its references are last_hidden_state at a few lengths). The *-torch
models come from torch.onnx.export with the TorchScript exporter (eager
attention), llama-dynamo from the dynamo exporter (sdpa attention); these three
have no KV cache.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixture_common as fc  # noqa: E402
from fixture_models import SEED, build_new_model, trace_every_expert  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PROMPT_LENGTHS = (1, 7, 64)
ENCODER_LENGTHS = (1, 7, 64, 128)
DECODE_STEPS = 16
GEN_TOKENS = 32
GEN_PROMPT = "The meaning of"

from fixture_specs import ARCHS, FEATURES, FIXTURES, UNIT, UNIT_NOTE  # noqa: E402


def tokenizer_source(name: str) -> str | None:
    """The committed fixture whose tokenizer.json `name` reuses, or None when
    it trains its own on the text source (the original fixtures do; the unit
    variants and qwen3 reuse that result, so they regenerate without it)."""
    arch = FIXTURES[name][0]
    if name in UNIT:
        return ARCHS[arch].get("tokenizer_from") or f"{arch}-optimum"
    return ARCHS[arch].get("tokenizer_from")


def build_tokenizer(arch: str, text: str):
    a = ARCHS[arch]
    tok = fc.train_bpe_tokenizer(text, a["vocab_size"], a["special"],
                                 bos=a["bos"] if a["prepend_bos"] else None, eos=a["eos"],
                                 cls_sep=a.get("cls_sep"))
    assert tok.get_vocab_size() == a["vocab_size"], tok.get_vocab_size()
    return tok


def hf_tokenizer(arch: str, tok, model_max_length: int = 128):
    a = ARCHS[arch]
    extra = {}
    if a.get("cls_sep"):
        extra = dict(cls_token=a["cls_sep"][0], sep_token=a["cls_sep"][1], mask_token="[MASK]")
    return fc.wrap_hf_tokenizer(tok, a["bos"], a["eos"], unk=a.get("unk"), pad=a.get("pad"),
                                model_max_length=model_max_length, **extra)


def build_model(arch: str, tok, perturb: bool = True):
    """`perturb`: move norm weights and biases off transformers' 1 / 0 init
    (False for the *-unit fixtures)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    if arch not in ("gpt2", "llama"):
        return build_new_model(arch, tok, perturb)
    a = ARCHS[arch]
    bos, eos = tok.token_to_id(a["bos"]), tok.token_to_id(a["eos"])
    torch.manual_seed(SEED)
    # A larger init than HF's default (0.02) spreads the logits out, so that
    # greedy choices are far from ties and robust to float reassociation.
    if arch == "gpt2":
        cfg = GPT2Config(vocab_size=a["vocab_size"], n_positions=128, n_embd=64,
                         n_layer=2, n_head=4, bos_token_id=bos, eos_token_id=eos,
                         initializer_range=0.1, tie_word_embeddings=True)
        model = GPT2LMHeadModel(cfg)
    else:
        cfg = LlamaConfig(vocab_size=a["vocab_size"], hidden_size=64, intermediate_size=128,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          max_position_embeddings=128, bos_token_id=bos, eos_token_id=eos,
                          pad_token_id=None, initializer_range=0.1, tie_word_embeddings=False)
        model = LlamaForCausalLM(cfg)
        # RMSNorm weights init to 1; perturb them so a wrong norm weight shows up.
        if perturb:
            with torch.no_grad():
                for n, p in model.named_parameters():
                    if n.endswith("norm.weight"):
                        p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def model_dims(cfg) -> dict:
    if cfg.model_type == "gpt2":
        return dict(num_layers=cfg.n_layer, hidden_size=cfg.n_embd, num_heads=cfg.n_head,
                    num_kv_heads=cfg.n_head, head_dim=cfg.n_embd // cfg.n_head,
                    max_positions=cfg.n_positions, vocab_size=cfg.vocab_size)
    if cfg.model_type == "llama":
        return dict(num_layers=cfg.num_hidden_layers, hidden_size=cfg.hidden_size,
                    num_heads=cfg.num_attention_heads, num_kv_heads=cfg.num_key_value_heads,
                    head_dim=cfg.hidden_size // cfg.num_attention_heads,
                    max_positions=cfg.max_position_embeddings, vocab_size=cfg.vocab_size)
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    if cfg.model_type == "falcon" and not cfg.new_decoder_architecture:
        kv = 1 if cfg.multi_query else heads
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    inter = getattr(cfg, "intermediate_size", None) or getattr(cfg, "ffn_dim", None)
    return dict(num_layers=cfg.num_hidden_layers, hidden_size=cfg.hidden_size,
                num_heads=heads, num_kv_heads=kv, head_dim=hd, intermediate_size=inter,
                max_positions=cfg.max_position_embeddings, vocab_size=cfg.vocab_size)


def torch_logits(model, ids: np.ndarray) -> np.ndarray:
    import torch
    with torch.no_grad():
        t = torch.from_numpy(ids.reshape(1, -1).astype(np.int64))
        return model(input_ids=t, attention_mask=torch.ones_like(t),
                     use_cache=False).logits[0].numpy()


def optimum_desc(task: str, opset: int) -> str:
    from importlib.metadata import PackageNotFoundError, version
    d = f"optimum {version('optimum')}"
    try:
        d += f" / optimum-onnx {version('optimum-onnx')}"
    except PackageNotFoundError:
        pass
    return d + f": main_export(task='{task}', no_post_process=True, opset={opset})"


def export(name: str, arch: str, exporter: str, model, hf_dir: Path, work: Path):
    """Returns (path of the exported ONNX file, description for reference.json)."""
    import torch

    a = ARCHS[arch]
    if exporter == "optimum" and a.get("encoder"):
        task = "feature-extraction"
        path = fc.export_optimum(hf_dir, work / name, task, opset=a["optimum_opset"])
        return path, optimum_desc(task, a["optimum_opset"])
    if exporter == "optimum":
        config_class = None
        if a.get("onnx_config") == "mistral":
            from optimum.exporters.onnx.model_configs import MistralOnnxConfig
            config_class = MistralOnnxConfig
        elif a.get("onnx_config") == "qwen2":
            from optimum.exporters.onnx.model_configs import Qwen2OnnxConfig
            config_class = Qwen2OnnxConfig
        if arch in ("mixtral", "qwen2moe", "mixtralsel"):
            trace_every_expert(softmax_after_selection=arch == "mixtralsel")
        path = fc.export_optimum_with_past(hf_dir, work / name, opset=a["optimum_opset"],
                                           onnx_config_class=config_class)
        desc = optimum_desc("text-generation-with-past", a["optimum_opset"])
        if config_class is not None:
            desc += f"; custom_onnx_configs: {config_class.__name__}"
        if arch in ("mixtral", "qwen2moe", "mixtralsel"):
            desc += "; the sparse MoE block traced over every expert (trace_every_expert)"
        if arch == "mixtralsel":
            desc += ", softmax after the top-k selection"
        return path, desc
    path = work / f"{name}.onnx"
    if exporter in ("torch", "torch14"):
        opset = a["torch_opset"] if exporter == "torch" else 14
        fc.export_torchscript_no_past(model, path, opset=opset)
        return path, (f"torch {torch.__version__}: torch.onnx.export(dynamo=False, TorchScript, "
                      f"opset_version={opset}, dynamic axes batch/sequence, "
                      "no KV cache); attn_implementation='eager'; transformers masks "
                      "built without vmap (fixture_common.traceable_masks)")
    if exporter == "dynamo":
        import onnxscript
        fc.export_dynamo_no_past(model, path, opset=18)
        return path, (f"torch {torch.__version__} / onnxscript {onnxscript.__version__}: "
                      "torch.onnx.export(dynamo=True, opset_version=18, dynamic_shapes "
                      "batch/sequence, optimize=True, no KV cache); attn_implementation='sdpa' "
                      "(transformers' own mask functions)")
    raise ValueError(exporter)


def model_manifest(arch: str, cfg, dims: dict, unit: bool = False) -> dict:
    d = {"model_type": cfg.model_type if arch not in ("gpt2", "llama") else arch, **dims,
         "bos_token_id": cfg.bos_token_id, "eos_token_id": cfg.eos_token_id,
         "seed": SEED,
         "initializer_range": getattr(cfg, "initializer_range", None) or getattr(cfg, "init_std")}
    if arch in FEATURES:
        d["features"] = FEATURES[arch]
    if unit:
        d["init"] = UNIT_NOTE
    return d


def make_fixture(name: str, arch: str, exporter: str, tok, model, hf_dir: Path,
                 out_root: Path, work: Path) -> dict:
    import onnx
    import onnxruntime
    import torch
    import transformers

    a = ARCHS[arch]
    out = out_root / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)

    # ---- export
    onnx_path, exp_desc = export(name, arch, exporter, model, hf_dir, work)
    fc.inline_and_save(onnx_path, out / "model.onnx")
    m = onnx.load(str(out / "model.onnx"))
    onnx.checker.check_model(m, full_check=True)
    ops = fc.op_types(m)
    assert not ({"If", "Loop", "Scan"} & set(ops)), ops
    assert not fc.non_default_ops(m), f"{name}: non-default-domain ops {fc.non_default_ops(m)}"
    assert not m.functions, f"{name}: local functions {[f.name for f in m.functions]}"
    if a.get("encoder"):
        return make_encoder_fixture(name, arch, exp_desc, tok, model, hf_dir, out, work, m, ops)

    # ---- tokenizer + config
    tok.save(str(out / "tokenizer.json"))
    hf_tok = hf_tokenizer(arch, tok, model_max_length=model_dims(model.config)["max_positions"])
    tmp_tok = work / f"{name}-tok"
    hf_tok.save_pretrained(str(tmp_tok))
    shutil.copy(tmp_tok / "tokenizer_config.json", out / "tokenizer_config.json")
    shutil.copy(hf_dir / "config.json", out / "config.json")
    if (hf_dir / "generation_config.json").exists():
        shutil.copy(hf_dir / "generation_config.json", out / "generation_config.json")

    # ---- references with ONNX Runtime
    dims = model_dims(model.config)
    V, kvh, hd = dims["vocab_size"], dims["num_kv_heads"], dims["head_dim"]
    lm = fc.OrtLM(out / "model.onnx", threads=1)
    rng = np.random.default_rng(SEED)
    n_special = len(a["special"])
    arrays: dict[str, np.ndarray] = {}
    cases = []
    max_torch_diff = 0.0
    for L in PROMPT_LENGTHS:
        prompt = rng.integers(n_special, V, size=L, dtype=np.int64)
        pre, toks, steps, feeds, outs = lm.prefill_and_decode(prompt, DECODE_STEPS, kvh, hd)
        ref = torch_logits(model, prompt)
        max_torch_diff = max(max_torch_diff, float(np.abs(ref - pre).max()))
        all_last = np.concatenate([pre[-1:], steps[:-1]], axis=0)  # logits each choice came from
        srt = np.sort(all_last, axis=-1)
        margin = float((srt[:, -1] - srt[:, -2]).min())
        p = f"len{L}_"
        arrays[p + "prompt_ids"] = prompt
        arrays[p + "prefill_logits"] = pre.astype(np.float32)
        arrays[p + "decode_ids"] = toks
        arrays[p + "decode_logits"] = steps.astype(np.float32)
        cases.append({
            "prompt_length": L,
            "arrays": {
                p + "prompt_ids": f"int64 [{L}]: prompt token ids (batch 1)",
                p + "prefill_logits": f"float32 [{L}, {V}]: logits for every prompt position, "
                                      "one run over the whole prompt (past length 0)",
                p + "decode_ids": f"int64 [{DECODE_STEPS}]: greedy tokens; decode_ids[0] = "
                                  "argmax(prefill_logits[-1]), decode_ids[i] = argmax(decode_logits[i-1])",
                p + "decode_logits": f"float32 [{DECODE_STEPS}, {V}]: decode_logits[i] = logits of "
                                     "the last position after feeding decode_ids[i]",
            },
            "min_top1_top2_margin": margin,
        })
        if L == 7:
            pdir = out / "prefill7"
            pdir.mkdir()
            from onnx import numpy_helper
            ins, outs_l = [], []
            for k, v in feeds.items():
                t = numpy_helper.from_array(np.ascontiguousarray(v), name=k)
                (pdir / f"input_{k}.pb").write_bytes(t.SerializeToString())
                ins.append({"name": k, "file": f"prefill7/input_{k}.pb",
                            "dtype": str(v.dtype), "shape": list(v.shape)})
            for k in lm.output_names:
                v = outs[k]
                t = numpy_helper.from_array(np.ascontiguousarray(v), name=k)
                (pdir / f"output_{k}.pb").write_bytes(t.SerializeToString())
                outs_l.append({"name": k, "file": f"prefill7/output_{k}.pb",
                               "dtype": str(v.dtype), "shape": list(v.shape)})
            prefill7 = {"inputs": ins, "outputs": outs_l,
                        "note": "ONNX TensorProto files, numpy_helper.from_array; input order "
                                "below is the graph's input order"}
            # keep graph input order
            order = [i.name for i in lm.sess.get_inputs()]
            prefill7["inputs"].sort(key=lambda d: order.index(d["name"]))

    enc = tok.encode(GEN_PROMPT)
    gen_prompt = np.array(enc.ids, dtype=np.int64)
    gen = lm.greedy(gen_prompt, GEN_TOKENS, kvh, hd, eos_id=None)
    arrays["generate_prompt_ids"] = gen_prompt
    arrays["generate_output_ids"] = np.array(gen, dtype=np.int64)
    np.savez(out / "reference.npz", **arrays)

    io = fc.io_spec(lm.sess)
    manifest = {
        "fixture": name,
        "description": f"tiny random-weight {arch} ({'with' if lm.with_past else 'without'} "
                       "KV cache inputs), for tests only; the text it generates is meaningless",
        "exporter": exp_desc,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__},
        "model": model_manifest(arch, model.config, dims, name in UNIT),
        "onnx": {
            "file": "model.onnx", "ir_version": m.ir_version, "opset_import": fc.opsets(m),
            "op_types": ops, "num_nodes": len(m.graph.node),
            "num_initializers": len(m.graph.initializer),
            "has_kv_cache": lm.with_past, **io,
        },
        "reference_runtime": {
            "engine": f"onnxruntime {onnxruntime.__version__}", "provider": "CPUExecutionProvider",
            "graph_optimization_level": "ORT_ENABLE_BASIC", "intra_op_num_threads": 1,
            "dtype": "float32", "batch": 1,
        },
        "input_filling": (
            {
                "input_ids": "int64 [1, L]: only the new tokens (whole prompt at prefill, one "
                             "token per decode step)",
                "attention_mask": "int64 [1, P+L], all ones (P = past length)",
                "position_ids": "int64 [1, L] = arange(P, P+L)" if "position_ids" in lm.inputs
                                else "not an input: the graph derives positions from the past "
                                     "length",
                "past_key_values.N.key/value": f"float32 [1, {kvh}, P, {hd}]; at prefill P = 0 "
                                               "(empty tensors); afterwards the previous call's "
                                               "present.N.key/value",
            } if lm.with_past else {
                "input_ids": "int64 [1, S]: the whole sequence so far (no KV cache); each "
                             "decode step re-runs prompt + generated tokens and uses the "
                             "last row of logits",
                "attention_mask": "int64 [1, S], all ones",
                "position_ids": "not an input: the graph uses arange(S)",
            }),
        "sanity": {"max_abs_diff_vs_pytorch_prefill": max_torch_diff},
        "arrays_file": "reference.npz",
        "array_naming": "numpy .npz (np.savez, uncompressed); keys listed per case below",
        "cases": cases,
        "generation": {
            "prompt_text": GEN_PROMPT,
            "prompt_ids_key": "generate_prompt_ids",
            "prompt_ids": gen_prompt.tolist(),
            "prompt_note": "tokenizer.json encoding of prompt_text"
                           + (f" (the post-processor prepends {a['bos']})"
                              if a["prepend_bos"] else ""),
            "max_new_tokens": GEN_TOKENS, "strategy": "greedy (argmax)", "stop_at_eos": False,
            "output_ids_key": "generate_output_ids", "output_ids": gen,
            "decoded_text": tok.decode(gen, skip_special_tokens=False),
            "driven_by": "KV cache, one token per step" if lm.with_past else
                         "re-running the full sequence each step",
        },
        "prefill7": prefill7,
    }
    fc.write_json(out / "reference.json", manifest)
    return manifest


def save_pbs(pdir: Path, feeds: dict, outs: dict, input_order: list[str],
             output_order: list[str]) -> dict:
    from onnx import numpy_helper
    pdir.mkdir()
    ins, outs_l = [], []
    for k in input_order:
        v = feeds[k]
        t = numpy_helper.from_array(np.ascontiguousarray(v), name=k)
        (pdir / f"input_{k}.pb").write_bytes(t.SerializeToString())
        ins.append({"name": k, "file": f"{pdir.name}/input_{k}.pb",
                    "dtype": str(v.dtype), "shape": list(v.shape)})
    for k in output_order:
        v = outs[k]
        t = numpy_helper.from_array(np.ascontiguousarray(v), name=k)
        (pdir / f"output_{k}.pb").write_bytes(t.SerializeToString())
        outs_l.append({"name": k, "file": f"{pdir.name}/output_{k}.pb",
                       "dtype": str(v.dtype), "shape": list(v.shape)})
    return {"inputs": ins, "outputs": outs_l,
            "note": "ONNX TensorProto files, numpy_helper.from_array; input order "
                    "below is the graph's input order"}


def make_encoder_fixture(name, arch, exp_desc, tok, model, hf_dir, out, work, m, ops) -> dict:
    """BERT-style encoder: references are the graph outputs (last_hidden_state) for
    whole sequences; no KV cache, no generation."""
    import onnxruntime
    import torch
    import transformers
    import onnx

    tok.save(str(out / "tokenizer.json"))
    dims = model_dims(model.config)
    tmp_tok = work / f"{name}-tok"
    hf_tokenizer(arch, tok, model_max_length=dims["max_positions"]).save_pretrained(str(tmp_tok))
    shutil.copy(tmp_tok / "tokenizer_config.json", out / "tokenizer_config.json")
    shutil.copy(hf_dir / "config.json", out / "config.json")

    sess = fc.make_session(out / "model.onnx", threads=1)
    in_names = [i.name for i in sess.get_inputs()]
    out_names = [o.name for o in sess.get_outputs()]
    known = {"input_ids", "attention_mask", "token_type_ids"}
    assert set(in_names) <= known, in_names
    assert "last_hidden_state" in out_names, out_names
    H = dims["hidden_size"]

    def feeds_for(ids):
        ids = np.asarray(ids, dtype=np.int64).reshape(1, -1)
        f = {"input_ids": ids, "attention_mask": np.ones_like(ids),
             "token_type_ids": np.zeros_like(ids)}
        return {k: f[k] for k in in_names}

    def torch_ref(ids):
        with torch.no_grad():
            t = torch.from_numpy(np.asarray(ids, dtype=np.int64).reshape(1, -1))
            return model(input_ids=t, attention_mask=torch.ones_like(t),
                         token_type_ids=torch.zeros_like(t)).last_hidden_state[0].numpy()

    rng = np.random.default_rng(SEED)
    n_special = len(ARCHS[arch]["special"])
    V = dims["vocab_size"]
    arrays, cases = {}, []
    max_torch_diff = 0.0
    prefill7 = None
    for L in ENCODER_LENGTHS:
        ids = rng.integers(n_special, V, size=L, dtype=np.int64)
        f = feeds_for(ids)
        o = dict(zip(out_names, sess.run(out_names, f)))
        hs = o["last_hidden_state"][0]
        max_torch_diff = max(max_torch_diff, float(np.abs(torch_ref(ids) - hs).max()))
        p = f"len{L}_"
        arrays[p + "input_ids"] = ids
        arrays[p + "last_hidden_state"] = hs.astype(np.float32)
        cases.append({
            "prompt_length": L,
            "input_ids_key": p + "input_ids",
            "outputs": {"last_hidden_state": p + "last_hidden_state"},
            "arrays": {
                p + "input_ids": f"int64 [{L}]: random token ids (no [CLS]/[SEP]), batch 1",
                p + "last_hidden_state": f"float32 [{L}, {H}]: output last_hidden_state[0]",
            },
        })
        if L == 7:
            prefill7 = save_pbs(out / "prefill7", f, o, in_names, out_names)
    # the tokenizer's encoding of a text, [CLS] ... [SEP]
    enc = tok.encode(GEN_PROMPT)
    ids = np.array(enc.ids, dtype=np.int64)
    f = feeds_for(ids)
    hs = dict(zip(out_names, sess.run(out_names, f)))["last_hidden_state"][0]
    max_torch_diff = max(max_torch_diff, float(np.abs(torch_ref(ids) - hs).max()))
    arrays["text_input_ids"] = ids
    arrays["text_last_hidden_state"] = hs.astype(np.float32)
    cases.append({
        "prompt_length": int(len(ids)),
        "prompt_text": GEN_PROMPT,
        "input_ids_key": "text_input_ids",
        "outputs": {"last_hidden_state": "text_last_hidden_state"},
        "arrays": {
            "text_input_ids": f"int64 [{len(ids)}]: tokenizer.json encoding of "
                              f"{GEN_PROMPT!r} ([CLS] ... [SEP])",
            "text_last_hidden_state": f"float32 [{len(ids)}, {H}]: output last_hidden_state[0]",
        },
    })
    np.savez(out / "reference.npz", **arrays)

    manifest = {
        "fixture": name,
        "description": f"tiny random-weight {arch} encoder (no KV cache, no generation), for "
                       "tests only; the hidden states are meaningless",
        "exporter": exp_desc,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__},
        "task": "feature-extraction",
        "model": model_manifest(arch, model.config, dims, name in UNIT),
        "onnx": {
            "file": "model.onnx", "ir_version": m.ir_version, "opset_import": fc.opsets(m),
            "op_types": ops, "num_nodes": len(m.graph.node),
            "num_initializers": len(m.graph.initializer),
            "has_kv_cache": False, **fc.io_spec(sess),
        },
        "reference_runtime": {
            "engine": f"onnxruntime {onnxruntime.__version__}", "provider": "CPUExecutionProvider",
            "graph_optimization_level": "ORT_ENABLE_BASIC", "intra_op_num_threads": 1,
            "dtype": "float32", "batch": 1,
        },
        "input_filling": {
            "input_ids": "int64 [1, L]: the whole sequence",
            "attention_mask": "int64 [1, L], all ones",
            "token_type_ids": "int64 [1, L], all zeros",
        },
        "sanity": {"max_abs_diff_vs_pytorch": max_torch_diff},
        "arrays_file": "reference.npz",
        "array_naming": "numpy .npz (np.savez, uncompressed); keys listed per case below",
        "cases": cases,
        "prefill7": prefill7,
    }
    fc.write_json(out / "reference.json", manifest)
    return manifest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(REPO / "test" / "fixtures"))
    ap.add_argument("--only", default="", help="comma-separated fixture names")
    ap.add_argument("--keep-work", action="store_true", help="keep the temporary HF/ONNX dir")
    args = ap.parse_args()

    import torch
    torch.set_num_threads(1)
    torch.manual_seed(SEED)

    names = [n for n in FIXTURES if not args.only or n in args.only.split(",")]
    out_root = Path(args.out)
    # Only the original fixtures train tokenizers on the text source.
    text = None
    if any(tokenizer_source(n) is None for n in names):
        text = fc.load_corpus(max_chars=3_000_000)
    work = Path(tempfile.mkdtemp(prefix="kiln-fixtures-"))
    summary = {}
    try:
        built = {}
        for name in names:
            arch, exporter = FIXTURES[name]
            key = (arch, name in UNIT)
            if key not in built:
                source = tokenizer_source(name)
                if source is None:
                    tok = build_tokenizer(arch, text)
                else:
                    from tokenizers import Tokenizer
                    tok = Tokenizer.from_file(str(REPO / "test" / "fixtures" / source /
                                                  "tokenizer.json"))
                    assert tok.get_vocab_size() == ARCHS[arch]["vocab_size"], source
                model = build_model(arch, tok, perturb=name not in UNIT)
                if name in UNIT:
                    fc.check_unit_init(model)
                hf_dir = work / f"hf-{arch}{'-unit' if name in UNIT else ''}"
                model.save_pretrained(str(hf_dir))
                if arch in ("gpt2", "llama"):
                    a = ARCHS[arch]
                    fc.wrap_hf_tokenizer(tok, a["bos"], a["eos"], unk=a.get("unk")).save_pretrained(str(hf_dir))
                else:
                    hf_tokenizer(arch, tok).save_pretrained(str(hf_dir))
                built[key] = (tok, model, hf_dir)
            tok, model, hf_dir = built[key]
            man = make_fixture(name, arch, exporter, tok, model, hf_dir, out_root, work)
            summary[name] = man
            size = (out_root / name / "model.onnx").stat().st_size
            print(f"\n== {name}: model.onnx {size} bytes, opset {man['onnx']['opset_import']}")
            print("   inputs: " + ", ".join(f"{i['name']}:{i['dtype']}{i['shape']}" for i in man["onnx"]["inputs"]))
            print("   outputs: " + ", ".join(f"{o['name']}:{o['dtype']}{o['shape']}" for o in man["onnx"]["outputs"]))
            print("   op types: " + " ".join(man["onnx"]["op_types"]))
            if "generation" in man:
                print(f"   max |ORT - PyTorch| prefill logits: {man['sanity']['max_abs_diff_vs_pytorch_prefill']:.3g}; "
                      f"min top1-top2 margin: {min(c['min_top1_top2_margin'] for c in man['cases']):.3g}")
            else:
                print(f"   max |ORT - PyTorch| last_hidden_state: {man['sanity']['max_abs_diff_vs_pytorch']:.3g}")
            assert size < 1024 * 1024, f"{name}: model.onnx too large"
            assert max(man["sanity"].values()) < 1e-3, "export mismatch"
    finally:
        if args.keep_work:
            print("work dir:", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    allops = sorted(set().union(*(set(m["onnx"]["op_types"]) for m in summary.values())))
    print("\nunion of op types:", " ".join(allops))


if __name__ == "__main__":
    main()
