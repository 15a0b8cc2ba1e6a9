#!/usr/bin/env python3
"""Trains the small demo language model shipped in test/fixtures/demo/.

    /path/to/venv/bin/python tools/train_demo.py [--minutes 20] [--threads 2]

A Llama-architecture decoder (LlamaConfig: hidden 256, 4 layers, 8 query heads
sharing 4 KV heads (GQA), SwiGLU 704, context 256, tied embeddings) with a
2048-entry byte-level BPE tokenizer, trained from scratch on the CPU for a fixed
wall-clock budget with AdamW and a cosine learning-rate schedule (warmup, then
cosine decay over the budget; the schedule follows elapsed time, so the number
of steps depends on the machine and its load; `--steps N` makes it step-based). It is then exported with Optimum (task
text-generation-with-past, no post-processing: one graph with past_key_values
inputs, no If node) to test/fixtures/demo/model.onnx, fp32, weights inline.

Training text: the prose of the CPython 3.11 documentation from the Debian
package **python3.11-doc** (/usr/share/doc/python3.11/html), licensed under the
**PSF License Agreement (Python Software Foundation License Version 2)**; see
/usr/share/doc/python3.11-doc/copyright. HTML is converted to plain text by
tools/fixture_common.py (code blocks, tables, navigation and index pages are
dropped). Install it with `apt-get install python3.11-doc`.

Outputs in test/fixtures/demo/: model.onnx, tokenizer.json,
tokenizer_config.json, config.json, generation_config.json, reference.json
(ONNX Runtime greedy generation of 32 tokens from "The meaning of", sampled
text, training statistics), SOURCE.md.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixture_common as fc  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SEED = 20240611
SPECIAL = ["<unk>", "<s>", "</s>"]
BOS, EOS, UNK = "<s>", "</s>", "<unk>"
PROMPT = "The meaning of"
SAMPLE_PROMPTS = ["The meaning of", "In this tutorial, we", "A module is",
                  "When the interpreter"]


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def encode_corpus(tok, text: str) -> np.ndarray:
    """<s> paragraph </s> <s> paragraph </s> ... as one int32 stream."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    bos, eos = tok.token_to_id(BOS), tok.token_to_id(EOS)
    out = []
    for enc in tok.encode_batch(lines, add_special_tokens=False):
        out.append(bos)
        out.extend(enc.ids)
        out.append(eos)
    return np.array(out, dtype=np.int32)


def main() -> None:
    ap = argparse.ArgumentParser(description="train the kiln demo model")
    ap.add_argument("--out", default=str(REPO / "test" / "fixtures" / "demo"))
    ap.add_argument("--minutes", type=float, default=20.0, help="training wall-clock budget")
    ap.add_argument("--steps", type=int, default=0,
                    help="if > 0, run this many steps with the schedule over steps (--minutes "
                         "is then only a safety cap); default: schedule over the time budget")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--intermediate", type=int, default=704)
    ap.add_argument("--ctx", type=int, default=256, help="max_position_embeddings")
    ap.add_argument("--train-len", type=int, default=128, help="training window length")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--warmup-frac", type=float, default=0.03)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True,
                    help="bf16 autocast for matmuls on CPU (weights and export stay fp32)")
    ap.add_argument("--bench", action="store_true", help="time a few steps and exit")
    args = ap.parse_args()

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.set_num_threads(args.threads)
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)

    t0 = time.time()
    text = fc.load_corpus()
    log(f"corpus: {len(text)} chars, {len(text.split())} words")
    tok = fc.train_bpe_tokenizer(text, args.vocab, SPECIAL, bos=BOS, eos=EOS)
    data = encode_corpus(tok, text)
    n_val = len(data) // 100
    train, val = data[:-n_val], data[-n_val:]
    log(f"tokens: {len(data)} (train {len(train)}, val {len(val)}); "
        f"tokenizer+encode {time.time() - t0:.0f}s")

    cfg = LlamaConfig(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads, max_position_embeddings=args.ctx,
        bos_token_id=tok.token_to_id(BOS), eos_token_id=tok.token_to_id(EOS),
        pad_token_id=None, tie_word_embeddings=True, initializer_range=0.02,
        rms_norm_eps=1e-5, attention_dropout=0.0)
    model = LlamaForCausalLM(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params / 1e6:.2f}M parameters")

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)

    T = args.train_len

    def batch(src: np.ndarray, bs: int):
        idx = rng.integers(0, len(src) - T - 1, size=bs)
        x = np.stack([src[i:i + T + 1] for i in idx]).astype(np.int64)
        return torch.from_numpy(x)

    def loss_on(x):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            logits = model(input_ids=x[:, :-1], use_cache=False).logits
        return torch.nn.functional.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))

    val_rng_state = np.random.default_rng(SEED + 1)
    val_batches = [torch.from_numpy(np.stack([val[i:i + T + 1] for i in
                   val_rng_state.integers(0, len(val) - T - 1, size=args.batch)]).astype(np.int64))
                   for _ in range(4)]

    def val_loss():
        model.eval()
        with torch.no_grad():
            v = float(np.mean([loss_on(x).item() for x in val_batches]))
        model.train()
        return v

    budget = args.minutes * 60.0
    if args.bench:
        budget = 1e9
    model.train()
    step, tokens, ema = 0, 0, None
    t_start = time.time()
    history = []
    while True:
        tfrac = (time.time() - t_start) / budget
        frac = step / args.steps if args.steps > 0 else tfrac
        if frac >= 1.0 or tfrac >= 1.0 or (args.bench and step == 6):
            break
        if frac < args.warmup_frac:
            lr = args.lr * max(frac / args.warmup_frac, 0.02)
        else:
            q = (frac - args.warmup_frac) / (1 - args.warmup_frac)
            lr = args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * q))
        for g in opt.param_groups:
            g["lr"] = lr
        x = batch(train, args.batch)
        loss = loss_on(x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += x.numel() - x.shape[0]
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        if args.bench or step % 50 == 0:
            el = time.time() - t_start
            log(f"step {step} loss {loss.item():.3f} ema {ema:.3f} lr {lr:.2e} "
                f"{tokens / el:.0f} tok/s elapsed {el / 60:.1f} min")
        if step % 500 == 0:
            v = val_loss()
            history.append({"step": step, "minutes": round((time.time() - t_start) / 60, 2),
                            "train_loss_ema": round(ema, 4), "val_loss": round(v, 4)})
            log(f"  val loss {v:.3f}")
    train_s = time.time() - t_start
    if args.bench:
        return
    final_val = val_loss()
    history.append({"step": step, "minutes": round(train_s / 60, 2),
                    "train_loss_ema": round(ema, 4), "val_loss": round(final_val, 4)})
    log(f"trained {step} steps, {tokens} tokens in {train_s / 60:.1f} min; "
        f"train loss (ema) {ema:.3f}, val loss {final_val:.3f}")

    export_and_record(args, tok, model.eval(), {
        "wall_minutes": round(train_s / 60, 2), "steps": step, "tokens_seen": int(tokens),
        "train_loss_ema": round(ema, 4), "val_loss": round(final_val, 4),
        "val_perplexity": round(math.exp(final_val), 2),
        "corpus_tokens": int(len(data)), "parameters": int(n_params),
        "optimizer": f"AdamW(betas=(0.9, 0.95), weight_decay={args.weight_decay}), "
                     f"grad clip 1.0, lr {args.lr} -> {args.min_lr} cosine over the time budget, "
                     f"warmup {args.warmup_frac:.0%}",
        "batch": f"{args.batch} x {T} tokens, random windows", "torch_threads": args.threads,
        "bf16_autocast": args.bf16, "seed": SEED, "history": history,
    })


def export_and_record(args, tok, model, train_info: dict) -> None:
    import onnx
    import onnxruntime
    import torch
    import transformers
    from importlib.metadata import version

    out = Path(args.out)
    work = Path(tempfile.mkdtemp(prefix="kiln-demo-"))
    try:
        hf_dir = work / "hf"
        model.generation_config.bos_token_id = model.config.bos_token_id
        model.generation_config.eos_token_id = model.config.eos_token_id
        model.save_pretrained(str(hf_dir))
        hf_tok = fc.wrap_hf_tokenizer(tok, BOS, EOS, unk=UNK, model_max_length=args.ctx)
        hf_tok.save_pretrained(str(hf_dir))
        onnx_path = fc.export_optimum_with_past(hf_dir, work / "onnx", opset=18)
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        fc.inline_and_save(onnx_path, out / "model.onnx")
        tok.save(str(out / "tokenizer.json"))
        for f in ("tokenizer_config.json", "config.json"):
            shutil.copy(hf_dir / f, out / f)
        gen_cfg = {"bos_token_id": model.config.bos_token_id,
                   "eos_token_id": model.config.eos_token_id,
                   "max_length": args.ctx, "do_sample": True, "temperature": 0.8,
                   "top_k": 40}
        fc.write_json(out / "generation_config.json", gen_cfg)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    m = onnx.load(str(out / "model.onnx"))
    onnx.checker.check_model(m)
    ops = fc.op_types(m)
    assert not ({"If", "Loop", "Scan"} & set(ops)), ops
    size = (out / "model.onnx").stat().st_size
    assert size <= 20 * 1024 * 1024, f"model.onnx is {size} bytes; shrink the model"

    lm = fc.OrtLM(out / "model.onnx", threads=args.threads)
    kvh, hd = model.config.num_key_value_heads, model.config.hidden_size // model.config.num_attention_heads
    eos = model.config.eos_token_id
    prompt = np.array(tok.encode(PROMPT).ids, dtype=np.int64)
    greedy = lm.greedy(prompt, 32, kvh, hd, eos_id=None)
    # PyTorch cross-check of the prompt logits
    with torch.no_grad():
        ref = model(input_ids=torch.from_numpy(prompt[None]), use_cache=False).logits[0].numpy()
    ort_logits = lm.run(lm.feeds(prompt[None], None, 0, kvh, hd))["logits"][0]
    diff = float(np.abs(ref - ort_logits).max())

    samples = []
    for i, p in enumerate(SAMPLE_PROMPTS):
        ids = np.array(tok.encode(p).ids, dtype=np.int64)
        s = lm.sample(ids, 48, kvh, hd, temperature=0.8, top_k=40, seed=SEED + i, eos_id=eos)
        samples.append({"prompt": p, "prompt_ids": ids.tolist(), "seed": SEED + i,
                        "output_ids": s, "text": p + tok.decode(s)})

    greedy_text = tok.decode(greedy)
    print("\n=== greedy (ORT, 32 tokens) ===\n" + PROMPT + greedy_text)
    print("\n=== samples (ORT, temperature 0.8, top-k 40) ===")
    for s in samples:
        print("-", s["text"].replace("\n", " "))

    io = fc.io_spec(lm.sess)
    manifest = {
        "fixture": "demo",
        "description": "small Llama-architecture LM trained on the CPython docs; demo only",
        "exporter": f"optimum {version('optimum')}: main_export(task='text-generation-with-past', "
                    "no_post_process=True, opset=18)",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__},
        "model": {"model_type": "llama", "num_layers": model.config.num_hidden_layers,
                  "hidden_size": model.config.hidden_size,
                  "num_heads": model.config.num_attention_heads, "num_kv_heads": kvh,
                  "head_dim": hd, "intermediate_size": model.config.intermediate_size,
                  "max_positions": model.config.max_position_embeddings,
                  "vocab_size": model.config.vocab_size,
                  "bos_token_id": model.config.bos_token_id, "eos_token_id": eos,
                  "tie_word_embeddings": True},
        "onnx": {"file": "model.onnx", "bytes": size, "ir_version": m.ir_version,
                 "opset_import": fc.opsets(m), "op_types": ops, "num_nodes": len(m.graph.node),
                 "has_kv_cache": lm.with_past, **io},
        "reference_runtime": {"engine": f"onnxruntime {onnxruntime.__version__}",
                              "provider": "CPUExecutionProvider",
                              "graph_optimization_level": "ORT_ENABLE_BASIC", "dtype": "float32",
                              "batch": 1},
        "input_filling": {
            "input_ids": "int64 [1, L]: new tokens only",
            "attention_mask": "int64 [1, P+L], all ones (P = past length)",
            "position_ids": "int64 [1, L] = arange(P, P+L)",
            "past_key_values.N.key/value": f"float32 [1, {kvh}, P, {hd}]; P = 0 (empty) at "
                                           "prefill, then the previous present.N.key/value",
        },
        "sanity": {"max_abs_diff_vs_pytorch_prompt_logits": diff},
        "generation": {"prompt_text": PROMPT, "prompt_ids": prompt.tolist(),
                   "prompt_note": "tokenizer.json encoding; the post-processor prepends <s>",
                   "max_new_tokens": 32, "strategy": "greedy (argmax)", "stop_at_eos": False,
                   "output_ids": greedy, "text": PROMPT + greedy_text},
        "samples": {"note": "ORT, temperature 0.8, top-k 40, numpy default_rng(seed).choice "
                            "over softmax; stops at </s>; illustrative only",
                    "items": samples},
        "training": train_info,
        "text_source": fc.TEXT_SOURCE,
    }
    fc.write_json(out / "reference.json", manifest)
    write_source_md(out, train_info, size, samples, PROMPT + greedy_text)
    log(f"wrote {out} (model.onnx {size} bytes); ORT vs PyTorch max diff {diff:.2e}")


def write_source_md(out: Path, info: dict, size: int, samples, greedy_text: str) -> None:
    s = fc.TEXT_SOURCE
    lines = [
        "# demo model: source and license of the training text",
        "",
        f"- Package: `{s['package']}` (`apt-get install python3.11-doc`), files under `{s['path']}`.",
        f"- License: {s['license']}; full text in `{s['license_file']}` and at "
        "https://docs.python.org/3.11/license.html. Copyright (c) 2001-2023 Python Software "
        "Foundation; all rights reserved.",
        f"- What was used: {s['content']}.",
        "- Tokenizer (`tokenizer.json`) and model weights (`model.onnx`) were trained from "
        "scratch on that text by `tools/train_demo.py`; no pretrained weights were used.",
        "",
        "## Training",
        "",
        f"- {info['parameters'] / 1e6:.2f}M parameters, {info['steps']} steps, "
        f"{info['tokens_seen']} tokens seen in {info['wall_minutes']} min on CPU "
        f"({info['torch_threads']} threads, bf16 autocast: {info['bf16_autocast']}).",
        f"- Final train loss (EMA) {info['train_loss_ema']}, held-out loss {info['val_loss']} "
        f"(perplexity {info['val_perplexity']}).",
        f"- {info['optimizer']}; batch {info['batch']}.",
        f"- model.onnx: {size} bytes, fp32.",
        "",
        "## Sample output (ONNX Runtime)",
        "",
        f"Greedy: {greedy_text!r}",
        "",
    ] + [f"- {x['text']!r}" for x in samples] + [""]
    (out / "SOURCE.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
