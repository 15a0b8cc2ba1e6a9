#!/usr/bin/env python3
"""Regenerates the small random-weight test models under test/fixtures/.

Run by developers, not by CI (CI only reads the committed fixtures):

    /path/to/venv/bin/python tools/make_fixtures.py [--only gpt2-optimum,...] [--out test/fixtures]

Requirements: tools/requirements-dev.txt (torch, transformers, optimum[onnx] /
optimum-onnx, onnxruntime, tokenizers, onnx, numpy) and the Debian package
python3.11-doc, whose HTML documentation (PSF License Agreement) is the text the
byte-level BPE tokenizers are trained on. See tools/fixture_common.py.

For each of gpt2-optimum, gpt2-torch, llama-optimum, llama-torch it writes
test/fixtures/<name>/:

    model.onnx          fp32, weights inline
    tokenizer.json      HF `tokenizers` byte-level BPE (+ tokenizer_config.json)
    config.json         the HF config of the model (bos/eos ids included)
    reference.npz       ONNX Runtime outputs (CPU EP, fp32); reference.json says
    reference.json      what every array is, how inputs were filled, the ONNX
                        inputs/outputs, opset and op types
    prefill7/           input_<onnx name>.pb / output_<onnx name>.pb TensorProtos
                        of the length-7 prefill, for `kiln exec`

The *-optimum models come from Optimum (task text-generation-with-past, without
post-processing, so a single graph with past_key_values inputs and no If node);
the *-torch models come from torch.onnx.export with the TorchScript exporter,
without KV cache.
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

REPO = Path(__file__).resolve().parent.parent
PROMPT_LENGTHS = (1, 7, 64)
DECODE_STEPS = 16
GEN_TOKENS = 32
GEN_PROMPT = "The meaning of"
SEED = 1234

ARCHS = {
    "gpt2": dict(
        vocab_size=512,
        special=["<|endoftext|>"], bos="<|endoftext|>", eos="<|endoftext|>",
        optimum_opset=18, torch_opset=17,
    ),
    "llama": dict(
        vocab_size=1024,
        special=["<unk>", "<s>", "</s>", "<|endoftext|>"], bos="<s>", eos="</s>",
        unk="<unk>", optimum_opset=18, torch_opset=17,
    ),
}

FIXTURES = {
    "gpt2-optimum": ("gpt2", "optimum"),
    "gpt2-torch": ("gpt2", "torch"),
    "llama-optimum": ("llama", "optimum"),
    "llama-torch": ("llama", "torch"),
}


def build_tokenizer(arch: str, text: str):
    a = ARCHS[arch]
    tok = fc.train_bpe_tokenizer(text, a["vocab_size"], a["special"],
                                 bos=a["bos"] if arch == "llama" else None, eos=a["eos"])
    assert tok.get_vocab_size() == a["vocab_size"], tok.get_vocab_size()
    return tok


def build_model(arch: str, tok):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

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
    return dict(num_layers=cfg.num_hidden_layers, hidden_size=cfg.hidden_size,
                num_heads=cfg.num_attention_heads, num_kv_heads=cfg.num_key_value_heads,
                head_dim=cfg.hidden_size // cfg.num_attention_heads,
                max_positions=cfg.max_position_embeddings, vocab_size=cfg.vocab_size)


def torch_logits(model, ids: np.ndarray) -> np.ndarray:
    import torch
    with torch.no_grad():
        t = torch.from_numpy(ids.reshape(1, -1).astype(np.int64))
        return model(input_ids=t, attention_mask=torch.ones_like(t),
                     use_cache=False).logits[0].numpy()


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
    if exporter == "optimum":
        onnx_path = fc.export_optimum_with_past(hf_dir, work / name, opset=a["optimum_opset"])
        from importlib.metadata import PackageNotFoundError, version
        exp_desc = f"optimum {version('optimum')}"
        try:
            exp_desc += f" / optimum-onnx {version('optimum-onnx')}"
        except PackageNotFoundError:
            pass
        exp_desc += (": main_export(task='text-generation-with-past', no_post_process=True, "
                     f"opset={a['optimum_opset']})")
    else:
        onnx_path = work / f"{name}.onnx"
        fc.export_torchscript_no_past(model, onnx_path, opset=a["torch_opset"])
        exp_desc = (f"torch {torch.__version__}: torch.onnx.export(dynamo=False, TorchScript, "
                    f"opset_version={a['torch_opset']}, dynamic axes batch/sequence, "
                    "no KV cache); attn_implementation='eager'; transformers masks "
                    "built without vmap (fixture_common.traceable_masks)")
    fc.inline_and_save(onnx_path, out / "model.onnx")
    m = onnx.load(str(out / "model.onnx"))
    onnx.checker.check_model(m)
    ops = fc.op_types(m)
    assert not ({"If", "Loop", "Scan"} & set(ops)), ops

    # ---- tokenizer + config
    tok.save(str(out / "tokenizer.json"))
    hf_tok = fc.wrap_hf_tokenizer(tok, a["bos"], a["eos"], unk=a.get("unk"),
                                  model_max_length=model_dims(model.config)["max_positions"])
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
        "model": {"model_type": arch, **dims,
                  "bos_token_id": model.config.bos_token_id,
                  "eos_token_id": model.config.eos_token_id,
                  "seed": SEED, "initializer_range": model.config.initializer_range},
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
                "position_ids": "int64 [1, L] = arange(P, P+L)",
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
                           + (" (the post-processor prepends <s>)" if arch == "llama" else ""),
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
    text = fc.load_corpus(max_chars=3_000_000)
    work = Path(tempfile.mkdtemp(prefix="kiln-fixtures-"))
    summary = {}
    try:
        built = {}
        for name in names:
            arch, exporter = FIXTURES[name]
            if arch not in built:
                tok = build_tokenizer(arch, text)
                model = build_model(arch, tok)
                hf_dir = work / f"hf-{arch}"
                model.save_pretrained(str(hf_dir))
                a = ARCHS[arch]
                fc.wrap_hf_tokenizer(tok, a["bos"], a["eos"], unk=a.get("unk")).save_pretrained(str(hf_dir))
                built[arch] = (tok, model, hf_dir)
            tok, model, hf_dir = built[arch]
            man = make_fixture(name, arch, exporter, tok, model, hf_dir, out_root, work)
            summary[name] = man
            size = (out_root / name / "model.onnx").stat().st_size
            print(f"\n== {name}: model.onnx {size} bytes, opset {man['onnx']['opset_import']}")
            print("   inputs: " + ", ".join(f"{i['name']}:{i['dtype']}{i['shape']}" for i in man["onnx"]["inputs"]))
            print("   outputs: " + ", ".join(f"{o['name']}:{o['dtype']}{o['shape']}" for o in man["onnx"]["outputs"]))
            print("   op types: " + " ".join(man["onnx"]["op_types"]))
            print(f"   max |ORT - PyTorch| prefill logits: {man['sanity']['max_abs_diff_vs_pytorch_prefill']:.3g}; "
                  f"min top1-top2 margin: {min(c['min_top1_top2_margin'] for c in man['cases']):.3g}")
            assert size < 2 * 1024 * 1024, f"{name}: model.onnx too large"
            assert man["sanity"]["max_abs_diff_vs_pytorch_prefill"] < 1e-3, "export mismatch"
    finally:
        if args.keep_work:
            print("work dir:", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    allops = sorted(set().union(*(set(m["onnx"]["op_types"]) for m in summary.values())))
    print("\nunion of op types:", " ".join(allops))


if __name__ == "__main__":
    main()
